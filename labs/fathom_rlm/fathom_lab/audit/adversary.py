"""The code-only adversary: the strongest cheap solver without `llm` we could write.

It reads the document only through `repl` output, like a model that writes regexes instead of
reading: it prints the sentences around every hit of the question's names (and, for a count, the
sentences of the asked chapter range that name the town), then answers with heuristics over those
lines. What it knows beyond the question is learned on `train` documents only (never from the
generator's templates):

* word weights: the log-odds of a word appearing in a supporting sentence rather than in another
  sentence that mentions the same name (relation verbs up, negations and hearsay down);
* the score a sentence needs to be counted, and which element of a person's ordered residences
  answers "after the k-th move", chosen by accuracy on `train`.

It is evaluated on `heldout`, whose relation and question wordings it never saw.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fathom_rlm.agent import prompts
from fathom_rlm.documents import TaskRecord

from envtools.policies.base import ChatResult
from fathom_lab.audit.baselines import infer_answer_type
from fathom_lab.audit.code_only import typed_candidates
from fathom_lab.ladder.protocol import (
    CALLS_PER_TURN,
    CHAPTER_RANGE,
    GIVE_UP,
    ID_TOKEN,
    NOT_FOUND,
    View,
    answer_message,
    assistant_message,
    learned,
    search_terms,
)

_WORD = re.compile(r"[a-z]+")
_YEAR = re.compile(r"\b1[5-9]\d\d\b")
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh")
_SENTENCE = re.compile(r"[^.!?\n]*[.!?]")
_TRAIN_ROWS = 150

# Lines of every hit of KEY (a regex) inside [A, B): the hit's sentence and the next one.
_LINES_CODE = """# lines {label}
A, B, K = {start}, {end}, {key}
L = []
for m in re_finditer(K, doc[A:B]):
    s, e = A + m[0], A + m[1]
    a = doc.rfind('.', 0, s) + 1
    f = doc.find('.', e)
    g = doc.find('.', f + 1) if f >= 0 else -1
    L.append(str(a) + '\\t' + doc[a:(B if g < 0 else min(B, g + 1))].replace('\\n', ' ').strip())
P = [[]]
for x in L:
    if P[-1] and sum([len(y) + 1 for y in P[-1]]) + len(x) > {cap}:
        P.append([])
    P[-1].append(x)
try:
    LINES
except NameError:
    LINES = {{}}
LINES[{label_json}] = P
print(len(P))"""

_PAGE_CODE = "# page {label} {i}\nprint('\\n'.join(LINES[{label_json}][{i}]))"


def sentences(text: str, pattern: str) -> list[tuple[int, str]]:
    """(offset, hit sentence + next sentence) for every hit of `pattern`: the same lines the REPL
    cell prints, computed directly (used to learn on `train`)."""
    out = []
    for m in re.finditer(pattern, text):
        a = text.rfind(".", 0, m.start()) + 1
        f = text.find(".", m.end())
        g = text.find(".", f + 1) if f >= 0 else -1
        out.append((a, text[a : (len(text) if g < 0 else g + 1)].replace("\n", " ").strip()))
    return out


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


@dataclass
class Model:
    """What the adversary learned on `train`: log-odds of a line word being in a supporting
    line, per asked answer type and per question word."""

    weights: dict[str, float] = field(default_factory=dict)
    count_threshold: float = 0.0
    temporal_offset: int = 0

    def score(self, line: str, question: str = "") -> float:
        keys = [infer_answer_type(question)] if question else []
        # Sorted: a set's order follows the string hash seed, and float sums follow the order.
        words = sorted(_words(line))
        total = sum(self.weights.get(w, 0.0) for w in words)
        for key in keys:
            total += sum(self.weights.get(f"{key}|{w}", 0.0) for w in words)
        return total


# ---------------------------------------------------------------------------- prediction


@dataclass
class Ask:
    """What regexes read off a question."""

    question: str
    kind: str
    terms: list[str]
    token: str | None
    chapters: tuple[int, int] | None
    nth: int | None

    @classmethod
    def of(cls, question: str) -> Ask:
        token = ID_TOKEN.search(question)
        chapters = CHAPTER_RANGE.search(question)
        low = question.lower()
        nth = next((i + 1 for i, w in enumerate(_ORDINALS) if re.search(rf"\b{w}\b", low)), None)
        return cls(
            question,
            infer_answer_type(question),
            search_terms(question),
            token.group(0) if token else None,
            (int(chapters.group(1)), int(chapters.group(2))) if chapters else None,
            nth,
        )

    @property
    def counting(self) -> bool:
        return self.chapters is not None and bool(re.search(r"(?i)how (many|often)", self.question))

    @property
    def comparing(self) -> bool:
        return len(self.terms) >= 2 and self.kind in ("year", "number") and not self.counting


Lines = Callable[[str], list[tuple[int, str]]]
"""Lines of a term (its hit sentences with their offsets)."""


def _asked(question: str, candidate: str) -> bool:
    return f" {candidate.lower()} " in f" {question.lower()} "


def _best_candidate(ask: Ask, lines: list[tuple[int, str]], model: Model, kind: str) -> str | None:
    votes: dict[str, float] = {}
    for _, line in lines:
        cands = [c for _, c in typed_candidates(kind, line) if not _asked(ask.question, c)]
        weight = model.score(line, ask.question)
        for c in cands[:1]:
            votes[c] = max(votes.get(c, -math.inf), weight)  # the best line for each candidate
    return max(votes, key=lambda c: (votes[c], c)) if votes else None


def predict(ask: Ask, lines: Lines, model: Model, region_lines: list[str] | None = None) -> str:
    """The adversary's answer from the printed lines (see the module docstring)."""
    if ask.token:
        return _best_candidate(ask, lines(re.escape(ask.token)), model, ask.kind) or GIVE_UP
    if ask.counting:
        threshold = model.count_threshold
        scored = [
            line for line in region_lines or () if model.score(line, ask.question) >= threshold
        ]
        return str(len(scored))
    if not ask.terms:
        return GIVE_UP
    if ask.comparing:
        years = []
        for term in ask.terms[:2]:
            year = _best_candidate(ask, lines(rf"\b{re.escape(term)}\b"), model, "year")
            if year:
                years.append(int(year))
        if len(years) < 2:
            return GIVE_UP
        if ask.kind == "number":
            return str(abs(years[0] - years[1]))
        later = re.search(r"(?i)younger|later|newer|last", ask.question)
        return str(max(years) if later else min(years))
    main = lines(rf"\b{re.escape(ask.terms[0])}\b")
    if ask.nth is not None:
        ordered = []
        for _, line in sorted(main):
            if model.score(line, ask.question) < model.count_threshold:
                continue
            for _, c in typed_candidates(ask.kind, line)[:1]:
                if not ordered or ordered[-1] != c:
                    ordered.append(c)
        i = ask.nth + model.temporal_offset
        return ordered[i] if 0 <= i < len(ordered) else (ordered[-1] if ordered else GIVE_UP)
    found = _best_candidate(ask, main, model, ask.kind)
    if found:
        return found
    # Two hops: the person best tied to the name, then the asked kind about that person.
    person = _best_candidate(ask, main, model, "person")
    if person:
        hop = _best_candidate(ask, lines(rf"\b{re.escape(person.split()[-1])}\b"), model, ask.kind)
        if hop:
            return hop
    return GIVE_UP


# ------------------------------------------------------------------------------ learning

_MODELS: dict[int, Model] = {}
"""The model learned on the first `train` rows, by document length (`protocol.learned`)."""


def _learn(doc_tokens: int) -> Model:
    from fathom_rlm.documents import build_split, get_document

    rows = build_split("train", _TRAIN_ROWS, doc_tokens=doc_tokens)
    # Each text once: the tuning below reads every document dozens of times.
    texts = {r.seed: get_document(r.seed, r.doc_tokens).text for r in rows}
    pos: Counter[str] = Counter()
    neg: Counter[str] = Counter()
    n_pos = n_neg = 0
    for row in rows:
        text = texts[row.seed]
        evidence = [text[s:e] for s, e in row.spans]
        question = row.question
        keys = [infer_answer_type(question)]
        for term in search_terms(question)[:2]:
            for _, line in sentences(text, rf"\b{re.escape(term)}\b"):
                hit = any(ev.strip() and ev.strip()[:40] in line for ev in evidence)
                words = _words(line)
                feats = [*words, *(f"{k}|{w}" for k in keys for w in words)]
                (pos if hit else neg).update(feats)
                n_pos, n_neg = n_pos + hit, n_neg + (not hit)
    # Only features seen a few times carry a weight; the rest are noise from one document.
    vocab = {w for w in set(pos) | set(neg) if pos[w] + neg[w] >= 3}
    weights = {
        w: math.log((pos[w] + 0.5) / (n_pos + 1)) - math.log((neg[w] + 0.5) / (n_neg + 1))
        for w in vocab
    }
    model = Model(weights)
    thresholds = [x / 2 for x in range(-16, 33)]
    model.count_threshold = _tune(rows, texts, model, "count_threshold", thresholds)
    model.temporal_offset = int(_tune(rows, texts, model, "temporal_offset", [-1, 0, 1]))
    return model


def _tune(
    rows: list[TaskRecord],
    texts: dict[int, str],
    model: Model,
    name: str,
    values: list[float],
) -> float:
    from fathom_rlm.documents import normalize_answer

    cases = []  # what the tuned value is tried on, read once
    for row in rows:
        ask = Ask.of(row.question)
        wanted = ask.counting if name == "count_threshold" else ask.nth is not None
        if wanted:
            text = texts[row.seed]
            region = _region_lines(text, ask) if ask.counting else None
            cases.append((ask, text, region, normalize_answer(row.answer)))
    best, best_hits = values[0], -1
    for value in values:
        setattr(model, name, value)
        hits = 0
        for ask, text, region, gold in cases:
            guess = predict(ask, lambda p, t=text: sentences(t, p), model, region)
            hits += normalize_answer(guess) == gold
        if hits > best_hits:
            best, best_hits = value, hits
    setattr(model, name, best)
    return best


def _region_lines(text: str, ask: Ask) -> list[str]:
    starts = [m.start() for m in re.finditer(r"(?m)^Chapter \d+:", text)] + [len(text)]
    first, last = ask.chapters or (1, 1)
    first, last = max(1, first), min(len(starts) - 1, last)
    if first > last or not ask.terms:
        return []
    a, b = starts[first - 1], starts[last]
    town = ask.terms[-1]
    return [line for _, line in sentences(text[a:b], rf"\b{re.escape(town)}\b")]


# -------------------------------------------------------------------------------- policy


class CodeOnly:
    """The code-only adversary as a policy (see the module docstring)."""

    name = "fathom-code-only"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        if not tools or not view.system.startswith(prompts.ROOT_ROLE):
            return ChatResult(answer_message(NOT_FOUND))
        model = await learned(_MODELS, _nearest_length(view.doc_chars), _learn)
        return ChatResult(self.root(view, model))

    def root(self, view: View, model: Model) -> dict[str, Any]:
        ask = Ask.of(view.question)
        printed = _printed_lines(view)
        wanted = _keys(ask)
        if ask.counting and _bounds(view) is None and not _started(view, "bounds"):
            return assistant_message(
                calls=[("repl", {"code": _SECTION_BOUNDS.format(*ask.chapters)})]
            )
        todo = _pending_pages(view)
        if todo:
            return assistant_message(calls=[("repl", {"code": c}) for c in todo[:CALLS_PER_TURN]])
        new = [(label, key) for label, key in wanted if not _started(view, label)]
        if ask.counting and not _started(view, "region"):
            bounds = _bounds(view)
            if bounds and ask.terms:
                town = rf"\b{re.escape(ask.terms[-1])}\b"
                new = [("region", town, *bounds)]  # type: ignore[list-item]
        if new and view.turns + 2 < view.max_turns:
            cap = max(1_000, view.output_cap - 200)
            codes = [_lines_code(item, cap, view.doc_chars) for item in new[:CALLS_PER_TURN]]
            return assistant_message(calls=[("repl", {"code": c}) for c in codes])
        keys = _keys_by_label(view)

        def lines(pattern: str) -> list[tuple[int, str]]:
            labels = [label for label, key in keys.items() if key == pattern]
            return printed.get(labels[0], []) if labels else []  # [] if never searched

        region = [line for _, line in printed.get("region", [])] if ask.counting else None
        answer = predict(ask, lines, model, region)
        hop = _second_hop(ask, printed, model)
        turns_left = view.turns + 2 < view.max_turns
        if answer == GIVE_UP and hop and not _started(view, hop[0]) and turns_left:
            cap = max(1_000, view.output_cap - 200)
            return assistant_message(
                calls=[("repl", {"code": _lines_code(hop, cap, view.doc_chars)})]
            )
        return answer_message(answer)


_SECTION_BOUNDS = """# bounds
S = [m[0] for m in re_finditer('(?m)^Chapter \\\\d+:', doc)] + [len(doc)]
first, last = max(1, {0}), min(len(S) - 1, {1})
print(to_json([S[first - 1], S[last]] if first <= last else []))"""


def _keys(ask: Ask) -> list[tuple[str, str]]:
    if ask.token:
        return [(ask.token, re.escape(ask.token))]
    if ask.counting:
        return []
    return [(t, rf"\b{re.escape(t)}\b") for t in ask.terms[: 2 if ask.comparing else 1]]


def _second_hop(ask: Ask, printed: dict[str, list[tuple[int, str]]], model: Model):
    if ask.token or ask.counting or ask.comparing or not ask.terms:
        return None
    person = _best_candidate(ask, printed.get(ask.terms[0], []), model, "person")
    if not person:
        return None
    term = person.split()[-1]
    return (term, rf"\b{re.escape(term)}\b")


def _lines_code(item: tuple, cap: int, doc_chars: int) -> str:
    label, key, *bounds = item
    start, end = bounds if bounds else (0, doc_chars)
    return _LINES_CODE.format(
        label=label,
        label_json=json.dumps(label),
        start=start,
        end=end,
        key=json.dumps(key),
        cap=cap,
    )


def _keys_by_label(view: View) -> dict[str, str]:
    """The regex each printed label was searched with (read back from the cells' code)."""
    out = {}
    for c in view.calls:
        code = c.args.get("code", "")
        m = re.match(r"# lines (.*)\nA, B, K = \d+, \d+, (.*)\n", code)
        if m:
            try:
                out[m.group(1)] = json.loads(m.group(2))
            except ValueError:
                continue
    return out


def _started(view: View, label: str) -> bool:
    prefixes = (f"# lines {label}\n", f"# {label}\n")
    return any(c.args.get("code", "").startswith(prefixes) for c in view.calls)


def _bounds(view: View) -> list[int] | None:
    for c in view.calls:
        if c.args.get("code", "").startswith("# bounds"):
            try:
                value = json.loads(c.output)
            except ValueError:
                return None
            return value if isinstance(value, list) and len(value) == 2 else None
    return None


def _pending_pages(view: View) -> list[str]:
    todo = []
    for c in view.calls:
        code = c.args.get("code", "")
        if code.startswith("# lines ") and c.output.strip().isdigit():
            label = code.splitlines()[0][len("# lines ") :]
            done = sum(
                1 for d in view.calls if d.args.get("code", "").startswith(f"# page {label} ")
            )
            todo += [
                _PAGE_CODE.format(label=label, label_json=json.dumps(label), i=i)
                for i in range(done, int(c.output.strip()))
            ]
    return todo


def _printed_lines(view: View) -> dict[str, list[tuple[int, str]]]:
    out: dict[str, list[tuple[int, str]]] = {}
    for c in view.calls:
        code = c.args.get("code", "")
        if not code.startswith("# page "):
            continue
        label = code.splitlines()[0][len("# page ") :].rsplit(" ", 1)[0]
        for line in c.output.splitlines():
            at, _, text = line.partition("\t")
            if at.isdigit():
                out.setdefault(label, []).append((int(at), text))
    return out


def _nearest_length(doc_chars: int) -> int:
    lengths = (16_000, 32_000, 64_000, 128_000, 200_000)
    return min(lengths, key=lambda n: abs(4 * n - doc_chars))
