"""The answer a perfect reader gives from the facts it has read.

Given a parsed question (:class:`QuestionIntent`) and facts read from the text (anything with
the fields of :class:`fathom_rlm.documents.facts.Fact`: ``relation``, ``subject``, ``value``,
``detail``, ``chapter``, ``spans``; in text order), these functions answer the question, count
for it, or name the entity a chain continues with. They never see the world, a task row or the
document: an honest planner may call them on what its readers returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fathom_rlm.documents.tasks.core import normalize_answer
from fathom_rlm.documents.tasks.intent import QuestionIntent

# Chains as (relation, field) steps from the entity the question names: each step looks up the
# fact of `relation` whose subject is the current entity and moves to its value (or detail).
CHAIN_STEPS: dict[str, tuple[tuple[str, str], ...]] = {
    "maker": (("maker", "value"),),
    "mentor": (("mentor", "value"),),
    "birthplace": (("birth", "value"),),
    "birth_year": (("birth", "detail"),),
    "seat": (("seat", "value"),),
    "founder": (("founding", "value"),),
    "founded_year": (("founding", "detail"),),
    "maker_birthplace": (("maker", "value"), ("birth", "value")),
    "maker_mentor": (("maker", "value"), ("mentor", "value")),
    "maker_mentor_birthplace": (("maker", "value"), ("mentor", "value"), ("birth", "value")),
    "founder_birthplace": (("founding", "value"), ("birth", "value")),
    "founder_mentor": (("founding", "value"), ("mentor", "value")),
    "mentor_birthplace": (("mentor", "value"), ("birth", "value")),
    "mentor_birth_year": (("mentor", "value"), ("birth", "detail")),
}
_PERSON_RELATIONS = frozenset({"residence", "employment", "mentor", "birth", "permit"})


def entity_key(surface: str, person: bool) -> str:
    """Identity of a surface: a person by family name (unique within a world; "Mistress X" and
    "Given X" agree), anything else by its normalised text."""
    if person:
        return surface.rsplit(" ", 1)[-1].lower()
    return normalize_answer(surface)


def _about(facts: Sequence[Any], relation: str, subject: str) -> list[Any]:
    person = relation in _PERSON_RELATIONS
    key = entity_key(subject, person)
    return [f for f in facts if f.relation == relation and entity_key(f.subject, person) == key]


def _start(intent: QuestionIntent) -> str | None:
    return intent.artefact or intent.org or intent.person


def _walk(intent: QuestionIntent, facts: Sequence[Any]) -> tuple[str | None, str | None]:
    """(answer, entity whose fact is missing) along the relation's chain."""
    current = _start(intent)
    if current is None:
        return None, None
    for relation, field in CHAIN_STEPS[intent.relation]:
        found = {getattr(f, field) for f in _about(facts, relation, current)}
        found.discard(None)
        if len(found) != 1:
            return None, current
        current = found.pop()
    return current, None


def next_hop(intent: QuestionIntent, facts: Sequence[Any]) -> str | None:
    """For a chain: the entity the next fact to find is about (the named entity when nothing
    is known yet); None when the facts already answer the question or it is not a chain."""
    if intent.relation not in CHAIN_STEPS:
        return None
    return _walk(intent, facts)[1]


def _history(facts: Sequence[Any], relation: str, subject: str) -> list[Any]:
    """A changing relation's facts about ``subject`` in text (story) order."""
    return sorted(_about(facts, relation, subject), key=lambda f: f.spans[-1])


def count_from_facts(intent: QuestionIntent, facts: Sequence[Any]) -> int:
    """Arrivals in the question's town among ``facts``: residence facts that record a move
    (facts with ``change`` False, an initial state, are not arrivals) and whose chapter, when
    known, lies in the question's range."""
    if intent.relation != "arrivals" or intent.town is None or intent.chapters is None:
        raise ValueError("count_from_facts answers arrival questions only")
    first, last = intent.chapters
    town = normalize_answer(intent.town)
    return sum(
        1
        for f in facts
        if f.relation == "residence"
        and normalize_answer(f.value) == town
        and getattr(f, "change", True)
        and (f.chapter is None or first <= f.chapter <= last)
    )


def _before(history: list[Any], target: str, person: bool) -> str | None:
    key = entity_key(target, person)
    for i in range(1, len(history)):
        if entity_key(history[i].value, person) == key:
            return history[i - 1].value
    return None


def _at(history: list[Any], k: int | None, field: str = "value") -> str | None:
    if k is None or k >= len(history):
        return None
    return getattr(history[k], field)


def _years(facts: Sequence[Any], relation: str, *subjects: str | None) -> list[int] | None:
    years = []
    for subject in subjects:
        found = {f.detail for f in _about(facts, relation, subject or "")} - {None}
        if len(found) != 1:
            return None
        years.append(int(found.pop()))
    return sorted(years)


def answer_from_facts(intent: QuestionIntent, facts: Sequence[Any]) -> str | None:
    """The answer the facts settle, or None. Histories (temporal questions) are taken in text
    order with the first fact as the initial state, so they need the subject's full history."""
    rel = intent.relation
    if rel in CHAIN_STEPS:
        return _walk(intent, facts)[0]
    if rel in ("permit_holder", "marked_object"):
        kind = "permit" if rel == "permit_holder" else "mark"
        holders = {f.subject for f in facts if f.relation == kind and f.value == intent.token}
        return holders.pop() if len(holders) == 1 else None
    if rel == "arrivals":
        return str(count_from_facts(intent, facts))
    if rel in ("older_birth_year", "younger_birth_year", "age_gap"):
        years = _years(facts, "birth", intent.person, intent.person2)
    elif rel in ("older_org_year", "org_year_gap"):
        years = _years(facts, "founding", intent.org, intent.org2)
    else:
        return _temporal_answer(intent, facts)
    if years is None:
        return None
    if rel in ("age_gap", "org_year_gap"):
        return str(years[1] - years[0])
    return str(years[1] if rel == "younger_birth_year" else years[0])


def _temporal_answer(intent: QuestionIntent, facts: Sequence[Any]) -> str | None:
    rel = intent.relation
    if rel in ("home_after_moves", "home_before_town"):
        history = _history(facts, "residence", intent.person or "")
        if rel == "home_after_moves":
            return _at(history, intent.nth)
        return _before(history, intent.town or "", person=False)
    if rel in ("owner_before_person", "owner_after_transfers"):
        history = _history(facts, "owner", intent.artefact or "")
        if rel == "owner_after_transfers":
            return _at(history, intent.nth)
        return _before(history, intent.person or "", person=True)
    if rel in ("employer_after_changes", "post_after_changes"):
        history = _history(facts, "employment", intent.person or "")
        return _at(history, intent.nth, "value" if rel == "employer_after_changes" else "detail")
    raise ValueError(f"unknown relation {rel!r}")
