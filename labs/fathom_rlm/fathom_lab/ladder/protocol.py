"""What every scripted fathom role shares: the transcript view, the sub-answer protocol between
a caller and its sub-calls, message builders and question search terms.

A role works from the messages of one request alone: it tells its role from the system prompt's
role line, re-reads its own earlier tool calls and their outputs to know where it is, and keeps no
other state. A sub-call answers `partial | next: <name> | evidence: <quote> || <quote>` when it
read part of what is needed (the quotes carry knowledge upward), the answer when it read all of
it, and `not found` otherwise; a caller passes knowledge down under "Known so far:".
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fathom_rlm.agent import prompts
from fathom_rlm.documents.world import ORG_KINDS, THINGS

NOT_FOUND = prompts.NOT_FOUND
KNOWN_HEADER = "Known so far:"
PARTIAL = "partial"
GIVE_UP = "unknown"
SELF_READ = "Read the text yourself, without sub-calls."
"""Appended to a sub-call's prompt when the sub-call budget leaves no room for it to delegate."""

WINDOW_DEF = """def window(s, e):
    p = doc.rfind('.', 0, s)
    a = doc.rfind('.', 0, p) + 1 if p > 0 else 0
    g = doc.find('.', e)
    for _ in range(2):
        g = doc.find('.', g + 1) if g >= 0 else -1
    return a, (len(doc) if g < 0 else g + 1)
"""
"""REPL code the reference cells share: the span of the sentence before a hit, the hit's sentence
and the two after it. A hit is often a pronoun's antecedent: the statement follows it, and the
verdict that may cancel the statement follows that, two sentences past the hit."""

ID_TOKEN = re.compile(r"\b[A-Z]{2}-\d{4}\b")
CHAPTER_RANGE = re.compile(
    r"chapters?\s+(\d+)\s+(?:to|and|through)\s+(?:chapter\s+)?(\d+)", re.IGNORECASE
)
CAPITAL_RUN = re.compile(r"[A-Z][a-z]+(?:'s)?(?:\s+[A-Z][a-z]+(?:'s)?)*")
QUESTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        "In Which What Who Whom Whose Where When How Name Give Of Once After From To Across For "
        "Before During The A An Chapter",
    )
)
KIND_WORDS = frozenset(w for name in (*THINGS, *ORG_KINDS) for w in name.split())
CALLS_PER_TURN = 8  # the loop's default cap on tool calls in one reply


_T = TypeVar("_T")
_LEARNING = threading.Lock()


async def learned(cache: dict[int, _T], key: int, learn: Callable[[int], _T]) -> _T:
    """`cache[key]`, filled by `learn(key)` on first use in a worker thread, once.

    What a policy learns on `train` (seconds of document generation) must not run on the event
    loop: evaluating in-process, the loop also drives every other rollout's sandbox calls, whose
    5 s timers would fire while it is blocked and restart their workers.
    """
    if key not in cache:

        def fill() -> None:
            with _LEARNING:  # concurrent first callers wait for one learning
                if key not in cache:
                    cache[key] = learn(key)

        await asyncio.to_thread(fill)
    return cache[key]


def split_prompt(prompt: str) -> tuple[str, str]:
    """(question, text of the "Known so far" block); a self-read instruction is dropped."""
    head, _, known = prompt.replace("\n" + SELF_READ, "").partition("\n" + KNOWN_HEADER)
    return head.strip(), known


def partial_answer(quotes: list[str], next_names: list[str]) -> str:
    parts = [PARTIAL]
    parts += [f"next: {name}" for name in next_names]
    parts.append("evidence: " + " || ".join(quotes))
    return " | ".join(parts)


@dataclass
class SubAnswer:
    """A sub-call's reply as the root understands it."""

    final: str | None = None
    next_names: list[str] = field(default_factory=list)
    """Leads, best first: a chain's next person, an alias of a name being followed."""
    quotes: list[str] = field(default_factory=list)


def parse_sub_answer(text: str) -> SubAnswer:
    text = text.strip()
    if not text or text.startswith(("Error:", "(the sub-call")) or text == NOT_FOUND:
        return SubAnswer()
    if not text.startswith(PARTIAL):
        return SubAnswer(final=text)
    out = SubAnswer()
    for part in text.split(" | ")[1:]:
        if part.startswith("next: "):
            out.next_names.append(part[len("next: ") :].strip())
        elif part.startswith("evidence: "):
            out.quotes = [q for q in part[len("evidence: ") :].split(" || ") if q]
    return out


# -------------------------------------------------------------------------- transcript view


@dataclass
class _Call:
    name: str
    args: dict[str, Any]
    output: str


@dataclass
class View:
    """What a role can know from its messages."""

    system: str
    user: str
    calls: list[_Call]
    turns: int

    @classmethod
    def of(cls, messages: list[dict[str, Any]]) -> View:
        system = next((m.get("content") or "" for m in messages if m["role"] == "system"), "")
        user = next((m.get("content") or "" for m in messages if m["role"] == "user"), "")
        outputs = {
            m.get("tool_call_id"): m.get("content") or "" for m in messages if m["role"] == "tool"
        }
        calls: list[_Call] = []
        turns = 0
        for m in messages:
            if m["role"] != "assistant":
                continue
            turns += 1
            for c in m.get("tool_calls") or ():
                fn = c.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except (ValueError, RecursionError):  # e.g. a malformed call, 50,000 deep
                    args = {}
                if isinstance(args, dict):
                    calls.append(_Call(fn.get("name") or "", args, outputs.get(c.get("id"), "")))
        return cls(system, user, calls, turns)

    def number(self, pattern: str, default: int) -> int:
        m = re.search(pattern, self.system)
        return int(m.group(1).replace(",", "")) if m else default

    @property
    def question(self) -> str:
        text = self.user
        if text.startswith(prompts.QUESTION_PREFIX):
            text = text[len(prompts.QUESTION_PREFIX) :]
        return text.partition(prompts.TEXT_PREFIX)[0]

    @property
    def doc_chars(self) -> int:
        return self.number(r"`doc`: ([\d,]+) characters", 0)

    @property
    def max_turns(self) -> int:
        return self.number(r"You have (\d+) turns", 4)

    @property
    def sub_calls(self) -> int:
        return self.number(r"and (\d+) sub-calls in total", 16)

    @property
    def slice_cap(self) -> int:
        return self.number(r"At most ([\d,]+) characters \(about", 12_000)

    @property
    def output_cap(self) -> int:
        return self.number(r"Output beyond ([\d,]+) characters", 4_000)


def assistant_message(
    content: str | None = None, calls: list[tuple[str, dict[str, Any]]] = ()
) -> dict:
    msg: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        msg["tool_calls"] = [
            {
                "id": f"call_{zlib.crc32(json.dumps([name, args]).encode()):08x}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(calls)
        ]
    return msg


def answer_message(text: str) -> dict[str, Any]:
    return assistant_message(f"<answer>{text}</answer>")


# ------------------------------------------------------------------------- question parsing


def search_terms(question: str) -> list[str]:
    """Distinctive words to grep for: a person's family name, an object's or body's root word,
    a lone place name. Question words and the generic kind words are skipped."""
    terms: list[str] = []
    for run in CAPITAL_RUN.findall(question):
        words = [w.removesuffix("'s") for w in run.split()]
        while words and words[0] in QUESTION_WORDS:
            words = words[1:]
        if not words:
            continue
        # "the Trothox Sextant" -> "Trothox"; "Nestor Zatei" -> "Zatei"; "Denhan" -> "Denhan".
        thing = words[-1] in KIND_WORDS and words[0] not in KIND_WORDS
        term = words[0] if thing else words[-1]
        if term not in terms and term not in KIND_WORDS:
            terms.append(term)
    return terms


def name_terms(name: str) -> list[str]:
    """What to grep for a name a reader handed back: its distinctive capitalised word, or for a
    descriptive alias ("the stooped gatekeeper") the phrase without its article, which also
    matches where a sentence capitalises the article."""
    terms = search_terms(name)
    if terms:
        return terms[:1]
    words = name.split()
    if words and words[0].lower() == "the":
        words = words[1:]
    return [" ".join(words)] if words else []


# Sections of the asked chapter range, each at most `cap` characters, cut at a paragraph break
# (a pronoun and its antecedent stay together), else after a full stop.
SECTIONS_CODE = """# sections
S = [m[0] for m in re_finditer('(?m)^Chapter \\\\d+:', doc)] + [len(doc)]
first, last = max(1, {first}), min(len(S) - 1, {last})
out = []
if first <= last:
    a, b = S[first - 1], S[last]
    while b - a > {cap}:
        c = doc.rfind('\\n', a, a + {cap}) + 1 or doc.rfind('.', a, a + {cap}) + 1
        c = c if c > a else a + {cap}
        out.append([a, c])
        a = c
    out.append([a, b])
print(to_json(out))"""
