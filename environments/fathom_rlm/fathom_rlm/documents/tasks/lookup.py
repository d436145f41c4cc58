"""Families that look facts up: an ID token (depth 0), one static fact, a chain of facts."""

from __future__ import annotations

import itertools
import random

from .builder import TaskBuilder, person_forms, pick
from .core import Task


def exact_id(b: TaskBuilder, rng: random.Random) -> Task | None:
    w = b.w
    if rng.random() < 0.6:
        p = pick(rng, w.people)
        e = b.ev(("permit", p.id, 0), (p.permit,), person_forms(p))
        answer, token, relation = b.person_answer(p.id), p.permit, "permit_holder"
    else:
        a = pick(rng, w.artefacts)
        e = b.ev(("mark", a.id, 0), (a.mark,), (a.name,))
        answer, token, relation = b.art_answer(a.id), a.mark, "marked_object"
    # The token must be unique in the text, or "the" holder is ambiguous.
    hits = b.doc.text.count(token)
    gold = (answer[0],) if hits == 1 else (answer[0], f"<{hits} occurrences>")
    return b.task(rng, relation, {"token": token}, answer, [e], gold)


def single_hop(b: TaskBuilder, rng: random.Random) -> Task | None:
    w = b.w
    r = rng.random()
    if r < 0.2:
        a = pick(rng, w.artefacts)
        m = w.people[a.maker]
        e = b.ev(("maker", a.id, 0), (a.name,), person_forms(m))
        return b.task(rng, "maker", {"artefact": a.name}, b.person_answer(m.id), [e])
    if r < 0.7:
        p = pick(rng, w.people)
        if r < 0.4:
            if p.mentor is None:
                return None
            m = w.people[p.mentor]
            e = b.ev(("mentor", p.id, 0), person_forms(p), person_forms(m))
            return b.task(rng, "mentor", {"person": p}, b.person_answer(m.id), [e])
        if r < 0.6:
            place = w.places[p.birthplace]
            e = b.ev(("birth", p.id, 0), person_forms(p), (place.name,))
            return b.task(rng, "birthplace", {"person": p}, b.place_answer(place.id), [e])
        e = b.ev(("birth", p.id, 0), person_forms(p), (str(p.birth_year),))
        return b.task(rng, "birth_year", {"person": p}, (str(p.birth_year), ()), [e])
    g = pick(rng, w.organisations)
    if r < 0.8:
        place = w.places[g.seat]
        e = b.ev(("seat", g.id, 0), (g.name,), (place.name,))
        return b.task(rng, "seat", {"org": g.name}, b.place_answer(place.id), [e])
    if r < 0.9:
        f = w.people[g.founder]
        e = b.ev(("founding", g.id, 0), (g.name,), person_forms(f))
        return b.task(rng, "founder", {"org": g.name}, b.person_answer(f.id), [e])
    e = b.ev(("founding", g.id, 0), (g.name,), (str(g.founded_year),))
    return b.task(rng, "founded_year", {"org": g.name}, (str(g.founded_year), ()), [e])


# Chain -> relation name. A = maker of an object, F = founder of an organisation, M = teacher,
# B = birthplace, Y = birth year; chains starting with M start from a person.
_CHAINS = {
    "AB": "maker_birthplace",
    "AM": "maker_mentor",
    "AMB": "maker_mentor_birthplace",
    "FB": "founder_birthplace",
    "FM": "founder_mentor",
    "MB": "mentor_birthplace",
    "MY": "mentor_birth_year",
}


def multi_hop(b: TaskBuilder, rng: random.Random) -> Task | None:
    w = b.w
    people = w.people
    chain = pick(rng, tuple(_CHAINS))
    hops = []
    slots: dict[str, object]
    if chain[0] == "A":
        a = pick(rng, w.artefacts)
        cur = people[a.maker]
        hops.append(b.ev(("maker", a.id, 0), (a.name,), person_forms(cur)))
        slots = {"artefact": a.name}
    elif chain[0] == "F":
        g = pick(rng, w.organisations)
        cur = people[g.founder]
        hops.append(b.ev(("founding", g.id, 0), (g.name,), person_forms(cur)))
        slots = {"org": g.name}
    else:
        cur = pick(rng, people)
        slots = {"person": cur}
    answer: tuple[str, tuple[str, ...]] = ("", ())
    for step in chain[1:] if chain[0] in "AF" else chain:
        if step == "M":
            if cur.mentor is None:
                return None
            nxt = people[cur.mentor]
            hops.append(b.ev(("mentor", cur.id, 0), person_forms(cur), person_forms(nxt)))
            cur = nxt
            answer = b.person_answer(cur.id)
        elif step == "B":
            place = w.places[cur.birthplace]
            hops.append(b.ev(("birth", cur.id, 0), person_forms(cur), (place.name,)))
            answer = b.place_answer(place.id)
        else:  # Y
            hops.append(b.ev(("birth", cur.id, 0), person_forms(cur), (str(cur.birth_year),)))
            answer = (str(cur.birth_year), ())
    starts = [h.span[0] for h in hops if h is not None]
    if len(starts) < len(hops):
        return None
    if any(abs(y - x) < b.min_gap for x, y in itertools.pairwise(starts)):
        b.reject("hops_too_close")
        return None
    return b.task(rng, _CHAINS[chain], slots, answer, hops)
