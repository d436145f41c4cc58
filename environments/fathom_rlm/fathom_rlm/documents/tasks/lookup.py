"""Families that look facts up: an ID token (depth 0), one static fact, a chain of facts."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

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
    """One contested fact of the world's question plan (contested.py)."""
    item = b.unasked(rng, b.w.contested.singles)
    if item is None:
        return None
    kind, sid, _ = item
    relation = kind
    if kind == "birth":
        # The plan never asks the prominent place (contested.prominent_names).
        top = b.w.places[b.w.people[sid].birthplace].name in b.prominent
        relation = "birth_year" if top or rng.random() < 1 / 3 else "birthplace"
    elif kind == "founding":
        relation = "founder" if rng.random() < 0.5 else "founded_year"
    w = b.w
    task: Task | None
    if relation == "maker":
        a = w.artefacts[sid]
        m = w.people[a.maker]
        e = b.ev(("maker", a.id, 0), (a.name,), person_forms(m))
        task = b.task(rng, "maker", {"artefact": a.name}, b.person_answer(m.id), [e])
    elif relation == "mentor":
        p = w.people[sid]
        m = w.people[p.mentor]
        e = b.ev(("mentor", p.id, 0), person_forms(p), person_forms(m))
        task = b.task(rng, "mentor", {"person": p}, b.person_answer(m.id), [e])
    elif relation == "birthplace":
        p = w.people[sid]
        place = w.places[p.birthplace]
        e = b.ev(("birth", p.id, 0), person_forms(p), (place.name,))
        task = b.task(rng, "birthplace", {"person": p}, b.place_answer(place.id), [e])
    elif relation == "birth_year":
        p = w.people[sid]
        e = b.ev(("birth", p.id, 0), person_forms(p), (str(p.birth_year),))
        task = b.task(rng, "birth_year", {"person": p}, (str(p.birth_year), ()), [e])
    else:
        g = w.organisations[sid]
        if relation == "seat":
            place = w.places[g.seat]
            e = b.ev(("seat", g.id, 0), (g.name,), (place.name,))
            task = b.task(rng, "seat", {"org": g.name}, b.place_answer(place.id), [e])
        elif relation == "founder":
            f = w.people[g.founder]
            e = b.ev(("founding", g.id, 0), (g.name,), person_forms(f))
            task = b.task(rng, "founder", {"org": g.name}, b.person_answer(f.id), [e])
        else:
            e = b.ev(("founding", g.id, 0), (g.name,), (str(g.founded_year),))
            answer = (str(g.founded_year), ())
            task = b.task(rng, "founded_year", {"org": g.name}, answer, [e])
    return None if task is None else replace(task, plan_item=item)


def multi_hop(b: TaskBuilder, rng: random.Random) -> Task | None:
    """A chain of the world's question plan: plain hops, then a contested last one."""
    chain = b.unasked(rng, b.w.contested.chains)
    if chain is None:
        return None
    w = b.w
    people = w.people
    hops = []
    slots: dict[str, object]
    if chain.letters[0] == "A":
        a = w.artefacts[chain.start]
        cur = people[a.maker]
        hops.append(b.ev(("maker", a.id, 0), (a.name,), person_forms(cur)))
        slots = {"artefact": a.name}
    elif chain.letters[0] == "F":
        g = w.organisations[chain.start]
        cur = people[g.founder]
        hops.append(b.ev(("founding", g.id, 0), (g.name,), person_forms(cur)))
        slots = {"org": g.name}
    else:
        cur = people[chain.start]
        slots = {"person": cur}
    answer: tuple[str, tuple[str, ...]] = ("", ())
    for step in chain.letters[1:] if chain.letters[0] in "AF" else chain.letters:
        if step == "M":
            assert cur.mentor is not None  # the plan walked this chain
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
        b.asked.add(chain)  # the plan's chapters were not far enough apart in characters
        return None
    task = b.task(rng, chain.relation, slots, answer, hops)
    return None if task is None else replace(task, plan_item=chain)
