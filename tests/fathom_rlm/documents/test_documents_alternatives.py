"""Retracted statements state alternative worlds drawn like the real one (alternatives.py)."""

from __future__ import annotations

import itertools
import random

import pytest
from fathom_rlm.documents import generate_document
from fathom_rlm.documents.alternatives import draw_alternatives
from fathom_rlm.documents.seeds import SPLIT_SEED_BASE
from fathom_rlm.documents.world_builder import build_world

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
    """Each alternative draws its values as the real world does (world.py), so testing the
    rules on a class of statements does not single out the true one."""
    world, alts = drawn
    start = world.start_year
    for a in alts:
        assert all(start - 75 <= year <= start - 45 for year, _ in a.births.values())
        assert all(start - 25 <= year <= start - 1 for _, year in a.foundings.values())
        born = {pid: year for pid, (year, _) in a.births.items()}
        assert all(year - born[f] >= 20 for f, year in a.foundings.values())


def _founder_seniority_pick(seed: int, doc_tokens: int) -> bool:
    """The red team's rule on one world: per class (the truth and five alternatives), how often
    its founders sit in the older half of another class's births, minus how often another
    class's founders sit in its own older half; the class with the highest score is taken for
    the true one (ties broken at random). True when it is."""
    world = build_world(seed, doc_tokens, random.Random(seed))
    rnd = random.Random(seed + 1)
    alts = draw_alternatives(world, rnd.random, N)[0]
    births = [{p.id: p.birth_year for p in world.people}]
    births += [{pid: year for pid, (year, _) in a.births.items()} for a in alts]
    founders = [{g.id: g.founder for g in world.organisations}]
    founders += [{g: f for g, (f, _) in a.foundings.items()} for a in alts]
    half = len(world.people) // 2
    seniors = [set(sorted(b, key=lambda pid: (b[pid], pid))[:half]) for b in births]
    score = [0] * (N + 1)
    for c, d in itertools.permutations(range(N + 1), 2):
        for g in founders[c]:
            score[c] += founders[c][g] in seniors[d]
            score[d] -= founders[c][g] in seniors[d]
    best = max(score)
    return rnd.choice([c for c in range(N + 1) if score[c] == best]) == 0


def test_the_order_of_the_draws_does_not_single_out_the_truth():
    """Six values of a fact are drawn one after another without repeats, the truth first. When
    a founder came from the older half of each world's own births (and the founding year from
    the founder's birth), each later draw avoided what the earlier worlds made likely, and the
    rule above picked the true class of 0.30 of held-out 16K documents. Every draw is now
    uniform over a set that is the same in every world, so the rule is at chance (1/6)."""
    seeds = range(SPLIT_SEED_BASE["heldout"], SPLIT_SEED_BASE["heldout"] + 400)
    assert _share(_founder_seniority_pick(seed, 16_000) for seed in seeds) <= 0.22


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
