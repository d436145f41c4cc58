"""Code-only rungs of the ladder: regex search through `repl`, never `llm`.

`GrepOnly` prints the hit lines of the question's ID token or first name and answers the nearest
candidate of the asked type.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from fathom_rlm.agent import prompts
from fathom_rlm.documents import normalize_answer
from fathom_rlm.documents.world import ORG_KINDS, ROLES, THINGS

from envtools.policies.base import ChatResult
from fathom_lab.audit.baselines import NUMBER_PATTERN, infer_answer_type
from fathom_lab.ladder.protocol import (
    GIVE_UP,
    ID_TOKEN,
    KIND_WORDS,
    NOT_FOUND,
    View,
    answer_message,
    assistant_message,
    search_terms,
)

# Capitalised words that open a sentence or a title, never a first name.
_SENTENCE_STARTS = frozenset(
    re.findall(
        r"\w+",
        "The In By At On For From With Within When After Before Once Few Everyone It He She His "
        "Her They Their A An Master Mistress Chapter",
    )
)
_PERSON = re.compile(r"\b([A-Z][a-z]+) ([A-Z][a-z]+)\b")
_PLACE = re.compile(r"\b(?:in|to|at|of|from|near) ([A-Z][a-z]+)\b(?! [A-Z])")
_YEAR = re.compile(r"\b1[5-9]\d\d\b")


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_TYPED: dict[str, re.Pattern[str]] = {
    "organisation": re.compile(rf"\b[A-Z][a-z]+ (?:{_alternation(ORG_KINDS)})\b"),
    "artefact": re.compile(rf"\b[A-Z][a-z]+ (?:{_alternation(THINGS)})\b"),
    "role": re.compile(rf"\b(?:{_alternation(ROLES)})\b"),
    "number": NUMBER_PATTERN,
    "year": _YEAR,
}


def typed_candidates(kind: str, line: str) -> list[tuple[int, str]]:
    """(offset, surface) of every candidate answer of `kind` written in `line`."""
    if kind == "person":
        return [
            (m.start(), m.group(0))
            for m in _PERSON.finditer(line)
            if m.group(1) not in _SENTENCE_STARTS
            and m.group(1) not in KIND_WORDS
            and m.group(2) not in KIND_WORDS
        ]
    if kind == "place":
        return [(m.start(1), m.group(1)) for m in _PLACE.finditer(line)]
    return [(m.start(), m.group(0)) for m in _TYPED[kind].finditer(line)]


def nearest_candidate(question: str, key: str, text: str) -> str | None:
    """The grep baseline over printed hit lines: at every hit of `key`, the nearest candidate of
    the asked type that the question does not name gets a vote; the most voted one wins."""
    kind = infer_answer_type(question)
    asked = f" {normalize_answer(question)} "
    votes: Counter[str] = Counter()
    for line in text.splitlines():
        hits = [m.start() for m in re.finditer(rf"\b{re.escape(key)}\b", line)]
        cands = [
            (at, c)
            for at, c in typed_candidates(kind, line)
            if f" {normalize_answer(c)} " not in asked
        ]
        for h in hits:
            if cands:
                votes[min(cands, key=lambda ac: abs(ac[0] - h))[1]] += 1
    return max(votes, key=lambda k: (votes[k], k)) if votes else None


_GREP_CODE = """# grep
L = []
for m in re_finditer('\\\\b' + re_escape({key}) + '\\\\b', doc):
    a = doc.rfind('.', 0, m[0]) + 1
    f = doc.find('.', m[1])
    g = doc.find('.', f + 1) if f >= 0 else -1
    L.append(doc[a:(len(doc) if g < 0 else g + 1)].strip())
G = '\\n'.join(L)
print(len(G))
print(G[:{chunk}])"""


class GrepOnly:
    """Honest but weak: regex searches through `repl` only, never `llm`. It prints the hit lines
    (the sentence of each hit and the next one) of the question's ID token or first name, a few
    printouts at most, and answers the candidate of the asked type nearest to the hits
    (`nearest_candidate`), the generator's grep baseline run on what the tools returned."""

    name = "fathom-grep-only"
    max_prints = 4

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        if not tools or not view.system.startswith(prompts.ROOT_ROLE):
            return ChatResult(answer_message(NOT_FOUND))
        question = view.question
        token = ID_TOKEN.search(question)
        key = token.group(0) if token else next(iter(search_terms(question)), None)
        if key is None:
            return ChatResult(answer_message(GIVE_UP))
        chunk = max(1_000, view.output_cap - 200)
        if not view.calls:
            code = _GREP_CODE.format(key=json.dumps(key), chunk=chunk)
            return ChatResult(assistant_message(calls=[("repl", {"code": code})]))
        first = view.calls[0].output.partition("\n")
        total = int(first[0]) if first[0].strip().isdigit() else 0
        if len(view.calls) == 1 and total > chunk and view.turns + 1 < view.max_turns:
            starts = range(chunk, min(total, self.max_prints * chunk), chunk)
            codes = [f"# more\nprint(G[{a}:{a + chunk}])" for a in starts]
            return ChatResult(assistant_message(calls=[("repl", {"code": c}) for c in codes]))
        shown = "\n".join([first[2], *(c.output for c in view.calls[1:])])
        return ChatResult(answer_message(nearest_candidate(question, key, shown) or GIVE_UP))
