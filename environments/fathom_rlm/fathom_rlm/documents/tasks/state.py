"""The temporal family: the state of a changing relation at a point of the story."""

from __future__ import annotations

import random

from .builder import TaskBuilder, person_forms, pick
from .core import Task


def temporal(b: TaskBuilder, rng: random.Random) -> Task | None:
    r = rng.random()
    if r < 0.35:
        return _home_after_moves(b, rng)
    if r < 0.5:
        return _home_before_town(b, rng)
    if r < 0.75:
        return _owner(b, rng)
    return _employment(b, rng)


def _home_after_moves(b: TaskBuilder, rng: random.Random) -> Task | None:
    p = pick(rng, b.w.people)
    moves = len(p.residence) - 1
    if moves < 2:
        return None
    k = min(moves, 2 + int(rng.random() * (moves - 1)))
    evidence = [
        b.ev(("residence", p.id, i), person_forms(p), (b.w.places[p.residence[i][1]].name,))
        for i in range(k + 1)
    ]
    answer = b.place_answer(p.residence[k][1])
    return b.task(rng, "home_after_moves", {"person": p, "nth": k}, answer, evidence)


def _home_before_town(b: TaskBuilder, rng: random.Random) -> Task | None:
    w = b.w
    p = pick(rng, w.people)
    if len(p.residence) < 3:
        return None
    k = 2 + int(rng.random() * (len(p.residence) - 2))
    target_name = w.places[p.residence[k][1]].name
    answer = b.place_answer(p.residence[k - 1][1])
    # Every stay that ended with a move to the target (usually one).
    gold = tuple(
        w.places[p.residence[i - 1][1]].name
        for i in range(1, len(p.residence))
        if p.residence[i][1] == p.residence[k][1]
    )
    evidence = [
        b.ev(("residence", p.id, k - 1), person_forms(p), (answer[0],)),
        b.ev(("residence", p.id, k), person_forms(p), (target_name,)),
    ]
    slots = {"person": p, "town": target_name}
    return b.task(rng, "home_before_town", slots, answer, evidence, gold)


def _owner(b: TaskBuilder, rng: random.Random) -> Task | None:
    w = b.w
    a = pick(rng, w.artefacts)
    if len(a.owners) < 2:
        return None
    k = 1 + int(rng.random() * (len(a.owners) - 1))
    if rng.random() < 0.5:
        y = w.people[a.owners[k][1]]
        gold = tuple(
            w.people[a.owners[i - 1][1]].name
            for i in range(1, len(a.owners))
            if a.owners[i][1] == y.id
        )
        before = w.people[a.owners[k - 1][1]]
        evidence = [
            b.ev(("owner", a.id, k - 1), (a.name,), person_forms(before)),
            b.ev(("owner", a.id, k), (a.name,), person_forms(y)),
        ]
        slots = {"artefact": a.name, "person": y}
        answer = b.person_answer(before.id)
        return b.task(rng, "owner_before_person", slots, answer, evidence, gold)
    evidence = [
        b.ev(("owner", a.id, i), (a.name,), person_forms(w.people[a.owners[i][1]]))
        for i in range(k + 1)
    ]
    answer = b.person_answer(a.owners[k][1])
    return b.task(rng, "owner_after_transfers", {"artefact": a.name, "nth": k}, answer, evidence)


def _employment(b: TaskBuilder, rng: random.Random) -> Task | None:
    w = b.w
    p = pick(rng, w.people)
    if len(p.employment) < 2:
        return None
    k = 1 + int(rng.random() * (len(p.employment) - 1))
    evidence = [
        b.ev(("employment", p.id, i), person_forms(p), (w.organisations[p.employment[i][1]].name,))
        for i in range(k + 1)
    ]
    slots = {"person": p, "nth": k}
    if rng.random() < 0.6:
        answer = b.org_answer(p.employment[k][1])
        return b.task(rng, "employer_after_changes", slots, answer, evidence)
    role = p.employment[k][2]
    aliases = (role.split()[-1],) if " " in role else ()
    evidence[-1] = b.ev(
        ("employment", p.id, k),
        person_forms(p),
        (w.organisations[p.employment[k][1]].name,),
        (role,),
    )
    return b.task(rng, "post_after_changes", slots, (role, aliases), evidence)
