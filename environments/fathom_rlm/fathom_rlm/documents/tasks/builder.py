"""Per-document state shared by the question families: lookups, spans, answers, wordings."""

from __future__ import annotations

import random
from typing import Any, TypeVar

from ..contested import MULTI_HOP_GAP_TOKENS, prominent_names
from ..document import Document
from ..seeds import split_of_seed
from ..world import Person
from .core import Evidence, Task, name_words, normalize_answer
from .intent import intent_from_slots
from .wordings import ORDINALS, RELATIONS, TIMES


def person_forms(p: Person) -> tuple[str, ...]:
    return (p.name, p.formal)


_Item = TypeVar("_Item")


def pick(rng: random.Random, seq):
    return seq[int(rng.random() * len(seq))]


class TaskBuilder:
    """What every family needs about one document; the families are functions over it."""

    def __init__(self, document: Document) -> None:
        self.doc = document
        self.w = document.world
        self.split = split_of_seed(document.seed)
        total = len(document.text)
        # Short documents cannot hold 20K-token gaps: ask for a quarter of the text instead.
        self.min_gap = min(MULTI_HOP_GAP_TOKENS * 4, total // 4)
        self.name_words = name_words(self.w)
        self.rejections: dict[str, int] = {}
        self.prominent = prominent_names(self.w)
        self.arrivals: Any = None  # counting.ArrivalIndex, built on the first count question
        # Items of the world's question plan already asked: a contested fact serves one question.
        self.asked: set[object] = set()

    def unasked(self, rng: random.Random, items: tuple[_Item, ...]) -> _Item | None:
        """One item of the world's question plan that no question asks yet, at random; None
        once every one is asked."""
        todo = [item for item in items if item not in self.asked]
        return pick(rng, todo) if todo else None

    def reject(self, reason: str) -> None:
        self.rejections[reason] = self.rejections.get(reason, 0) + 1

    # ---- spans
    def ev(
        self, key: tuple[str, int, int], *groups: tuple[str, ...], sentence_only: bool = False
    ) -> Evidence | None:
        """The evidence of the fact ``key``: its sentence and (unless ``sentence_only``) the
        spans that name its subject elsewhere; None when the text does not state it."""
        facts = getattr(self.doc, "facts", None)
        if facts is not None:
            fact = facts.get(key)
            if fact is None:
                return None
            support = () if sentence_only else tuple(fact.spans[:-1])
            verdict = self.doc.verdicts.get(key)
            if verdict is not None and not sentence_only:
                support += (verdict,)  # a contested statement stands only by its verdict
            return Evidence(fact.spans[-1], tuple(groups), support)
        span = self.doc.spans.get(key)  # documents without fact annotations: one span per fact
        return None if span is None else Evidence(span, tuple(groups))

    # ---- answers of each type: (answer, aliases)
    def person_answer(self, pid: int) -> tuple[str, tuple[str, ...]]:
        p = self.w.people[pid]
        return p.name, tuple(p.aliases())

    def place_answer(self, pl: int) -> tuple[str, tuple[str, ...]]:
        return self.w.places[pl].name, ()

    def org_answer(self, g: int) -> tuple[str, tuple[str, ...]]:
        org = self.w.organisations[g]
        return org.name, tuple(org.aliases())

    def art_answer(self, a: int) -> tuple[str, tuple[str, ...]]:
        art = self.w.artefacts[a]
        return art.name, tuple(art.aliases())

    # ---- the task itself
    def task(
        self,
        rng: random.Random,
        relation: str,
        slots: dict[str, object],
        answer: tuple[str, tuple[str, ...]],
        evidence: list[Evidence | None] | tuple[Evidence | None, ...],
        gold_values: tuple[str, ...] | None = None,
        region: tuple[int, int] | None = None,
    ) -> Task | None:
        """A task of ``relation`` about ``slots`` (names as strings, ``person`` as a Person,
        ``nth`` as an int), worded with this document's split's templates in a random order.
        None when a supporting span is missing."""
        if not evidence or any(e is None for e in evidence):
            return None
        fields: dict[str, str] = {}
        for key, value in slots.items():
            if key == "nth":
                assert isinstance(value, int)
                fields["ord"], fields["times"] = ORDINALS[value], TIMES[value]
            elif isinstance(value, Person):
                fields[key] = value.name
                if key == "person":
                    fields["poss"], fields["pron"] = value.possessive, value.pronoun
            else:
                fields[key] = str(value)
        wordings = [t.format(**fields) for t in RELATIONS[relation].wordings(self.split)]
        rng.shuffle(wordings)
        meaning = {k: v for k, v in fields.items() if k not in ("poss", "pron", "times")}
        text, aliases = answer
        norm_alias: list[str] = []
        for a in aliases:
            if normalize_answer(a) != normalize_answer(text) and a not in norm_alias:
                norm_alias.append(a)
        return Task(
            question=wordings[0],
            answer=text,
            aliases=tuple(norm_alias),
            intent=intent_from_slots(relation, meaning),
            evidence=tuple(e for e in evidence if e is not None),
            gold_values=(text,) if gold_values is None else gold_values,
            wordings=tuple(wordings),
            region=region,
        )
