"""Retracted statements state alternative worlds drawn like the real one (alternatives.py)."""

from __future__ import annotations

import random

import pytest
from fathom_rlm.documents import generate_document
from fathom_rlm.documents.alternatives import draw_alternatives
from fathom_rlm.documents.seeds import SPLIT_SEED_BASE

N = 5


@pytest.fixture(scope="module", params=[16_000, 64_000])
def drawn(request):
    doc = generate_document(SPLIT_SEED_BASE["heldout"] + 2, request.param)
    return doc.world, draw_alternatives(doc.world, random.Random(0).random, N)[0]


def _share(flags) -> float:
    flags = list(flags)
    return sum(flags) / len(flags)


def test_every_fact_gets_six_different_values(drawn):
    world, alts = drawn
    for p in world.people:
        assert len({p.birth_year, *(a.births[p.id][0] for a in alts)}) == N + 1
        assert len({p.birthplace, *(a.births[p.id][1] for a in alts)}) == N + 1
        if p.mentor is not None:
            teachers = [p.mentor, *(a.mentors[p.id] for a in alts)]
            assert len(set(teachers)) == N + 1 and p.id not in teachers
    for g in world.organisations:
        assert len({g.founder, *(a.foundings[g.id][0] for a in alts)}) == N + 1
        assert len({g.founded_year, *(a.foundings[g.id][1] for a in alts)}) == N + 1
        assert len({g.seat, *(a.seats[g.id] for a in alts)}) == N + 1
    for art in world.artefacts:
        assert len({art.maker, *(a.makers[art.id] for a in alts)}) == N + 1


def test_alternatives_keep_the_worlds_rules(drawn):
    """Each alternative obeys the rules the real world was drawn by, under its own births, so
    testing the rules on a class of statements does not single out the true one."""
    world, alts = drawn
    people = world.people
    for a in alts:
        born = {pid: year for pid, (year, _) in a.births.items()}
        assert all(world.start_year - 71 <= y <= world.start_year - 16 for y in born.values())
        ranked = sorted(born, key=lambda j: (born[j], j))
        seniors = set(ranked[: max(1, len(people) // 2)])
        assert _share(f in seniors for f, _ in a.foundings.values()) >= 0.9
        for f, year in a.foundings.values():
            assert year == world.start_year - 1 or 20 <= year - born[f] <= 44


def test_no_statement_names_someone_the_story_has_not_met(drawn):
    """Teachers, makers and founders, true or false, are all in the story when the fact is told:
    a false one who was not would be told apart by code that tracks introductions."""
    world, alts = drawn
    told = {(e.kind, e.subject): e.time for e in world.events}
    named = [(told["mentor", p.id], p.mentor) for p in world.people if p.mentor is not None]
    named += [(told["maker", art.id], art.maker) for art in world.artefacts]
    named += [(told["founding", g.id], g.founder) for g in world.organisations]
    for a in alts:
        named += [(told["mentor", p], m) for p, m in a.mentors.items()]
        named += [(told["maker", art], m) for art, m in a.makers.items()]
        named += [(told["founding", g], f) for g, (f, _) in a.foundings.items()]
    assert len(named) > 6 * len(world.organisations)
    assert all(world.people[pid].intro <= at for at, pid in named)


def test_retracted_statements_state_the_alternatives():
    """The k-th retracted birth statement of a person states alternative k's place and year."""
    doc = generate_document(SPLIT_SEED_BASE["train"] + 4, 16_000)
    places = {p.name: p.id for p in doc.world.people} | {p.formal: p.id for p in doc.world.people}
    stated = {}
    for d in doc.distractors:
        if d.kind == "retracted" and d.relation == "birth":
            stated.setdefault(places[d.subject], []).append((d.fact.detail, d.value))
    assert stated
    for pid, values in stated.items():
        p = doc.world.people[pid]
        assert len(values) == N and len(set(values)) == N
        assert all(
            y != str(p.birth_year) and v != doc.world.places[p.birthplace].name for y, v in values
        )
