"""Tasks and their rows, answer matching, and the checks every question must pass.

A wording is kept only if it passes :func:`check_task`: the gold is unique, the gold is not
written in the question, every supporting span exists and contains its evidence, and (for depth
>= 1) the question does not share its distinctive words with the needle, so that finding the
needle takes reading, not string matching.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from ..document import Document
from ..world import World
from .intent import FAMILIES, READING_FAMILIES, QuestionIntent
from .record import TaskRecord

DEFAULT_FAMILY_MIX: dict[str, float] = {
    "exact_id": 0.15,
    "single_hop": 0.25,
    "multi_hop": 0.20,
    "temporal": 0.15,
    "aggregation": 0.15,
    "comparison": 0.10,
}

OVERLAP_MAX = 0.25  # share of the question's content words allowed to appear in a needle
# Families whose questions must rest on at least one fact stated across several spans (a
# pronoun or an alias for its subject), so that no single line holds the answer. Aggregation
# counts sentences that name the town; who moved does not matter to it.
MULTI_SPAN_REQUIRED: dict[str, bool] = {
    "single_hop": True,
    "multi_hop": True,
    "temporal": True,
    "comparison": True,
}
AGGREGATION_OVERLAP_SHARE = 0.5  # share of counted needles a count question may be close to

_STOPWORD_TEXT = """
    a an the of in on at to for from by with and or but as is was were be been being did do does
    had has have that this these those it its which what who whom whose where when how many much
    after before just right immediately once twice times three four five six between across
    through into over under whichever whoever one any some his her their he she they them
    town year person people someone object item organisation chapter chapters name give
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_WORD = re.compile(r"[a-z]+")


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation and articles, collapse whitespace (the reward's matcher)."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[^\w\s]|_", " ", text)
    return " ".join(t for t in text.split() if t not in ("a", "an", "the"))


def matches_gold(prediction: str, answer: str, aliases: list[str] | tuple[str, ...] = ()) -> bool:
    """Normalised exact match against the answer or any alias."""
    pred = normalize_answer(prediction)
    return bool(pred) and any(pred == normalize_answer(a) for a in (answer, *aliases))


def _stem(word: str) -> str:
    for suffix in ("ation", "ing", "ed", "es", "er", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:5]


@dataclass(frozen=True)
class Evidence:
    """One fact a question rests on: the sentence stating it (``span``), the other spans it needs
    to be read right (``support``: a pronoun's antecedent, an alias's introduction, and for a
    contested fact the verdict after it; empty for a plain statement that names its subject),
    and what the fact's text must contain: every group of ``required`` needs one of its strings
    somewhere in ``support`` or ``span``."""

    span: tuple[int, int]
    required: tuple[tuple[str, ...], ...]
    support: tuple[tuple[int, int], ...] = ()

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        """Every span of the fact, in text order."""
        return tuple(sorted((*self.support, self.span)))


@dataclass(frozen=True)
class Task:
    question: str
    answer: str
    aliases: tuple[str, ...]
    intent: QuestionIntent
    evidence: tuple[Evidence, ...]
    # Every value the question's semantics allow, computed from the world: must be one.
    gold_values: tuple[str, ...]
    wordings: tuple[str, ...] = ()  # alternative questions, tried in order
    # Character range [start, end) of the text the question asks about as a whole (the counted
    # chapters of an aggregation); None when the answer rests on the supporting spans alone.
    region: tuple[int, int] | None = None
    # The item of the world's question plan this task asks (contested.py), if any: a contested
    # fact serves one question of its document. Not part of the row.
    plan_item: object = None

    @property
    def family(self) -> str:
        return self.intent.family

    @property
    def answer_type(self) -> str:
        return self.intent.answer_type

    @property
    def depth(self) -> int:
        return FAMILIES[self.family]

    def record(self, document: Document) -> TaskRecord:
        """The typed row of this task about ``document``."""
        return TaskRecord(
            question=self.question,
            answer=self.answer,
            aliases=tuple(self.aliases),
            seed=document.seed,
            family=self.family,
            depth=self.depth,
            spans=tuple((start, end) for start, end in row_spans(self.evidence)),
            doc_tokens=document.doc_tokens,
            region=None if self.region is None else (self.region[0], self.region[1]),
        )


def row_spans(evidence: tuple[Evidence, ...]) -> list[tuple[int, int]]:
    """Every span of every fact, in evidence order (each fact's in text order), once each."""
    out: list[tuple[int, int]] = []
    for ev in evidence:
        for span in ev.spans:
            if span not in out:
                out.append(span)
    return out


def name_words(world: World) -> frozenset[str]:
    """Every word of every name in the world (left out of the lexical-overlap measure)."""
    words: set[str] = {"mistress", "master"}
    for p in world.people:
        words.update(_WORD.findall(" ".join([p.name, *p.aliases()]).lower()))
    for x in (*world.places, *world.organisations, *world.artefacts):
        words.update(_WORD.findall(x.name.lower()))
    return frozenset(words)


def _content_stems(text: str, exclude: frozenset[str]) -> set[str]:
    return {
        _stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and w not in exclude
    }


def lexical_overlap(question: str, needle: str, names: frozenset[str]) -> float:
    """Share of the question's content words (names excluded) whose stem occurs in the needle."""
    q = _content_stems(question, names)
    if not q:
        return 0.0
    return len(q & _content_stems(needle, names)) / len(q)


def check_task(document: Document, task: Task, names: frozenset[str] | None = None) -> str | None:
    """Return why ``task`` must be rejected, or None when it passes every check."""
    if len(set(task.gold_values)) != 1 or normalize_answer(task.gold_values[0]) != normalize_answer(
        task.answer
    ):
        return "gold_not_unique"
    q_norm = f" {normalize_answer(task.question)} "
    for form in (task.answer, *task.aliases):
        norm = normalize_answer(form)
        if not norm or f" {norm} " in q_norm:
            return "gold_in_question"
    if not task.evidence:
        return "span_missing"
    text = document.text
    for ev in task.evidence:
        if not all(0 <= start < end <= len(text) for start, end in ev.spans):
            return "span_missing"
        chunk = " ".join(text[start:end] for start, end in ev.spans).lower()
        for group in ev.required:
            if not any(s.lower() in chunk for s in group):
                return "span_without_evidence"
    if (
        MULTI_SPAN_REQUIRED.get(task.family, False)
        and hasattr(document, "facts")
        and not any(ev.support for ev in task.evidence)
    ):
        # Every fact is stated with its subject's name in the same sentence: one grep hit
        # line would hold the whole answer.
        return "single_line"
    if task.family in READING_FAMILIES:
        words = names if names is not None else name_words(document.world)
        close = [
            lexical_overlap(task.question, text[ev.span[0] : ev.span[1]], words) > OVERLAP_MAX
            for ev in task.evidence
        ]
        # A count question is refused when its wording parrots most of the counted needles,
        # not when any one does: a per-needle rule would refuse large counts more often than
        # small ones and make the count guessable from the wording.
        too_close = sum(close) > len(close) * AGGREGATION_OVERLAP_SHARE
        if too_close if task.family == "aggregation" else any(close):
            return "lexical_overlap"
    return None
