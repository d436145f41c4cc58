"""The false values of retracted statements, drawn as whole alternative worlds.

Every one-off fact (birth, mentor, maker, founding, seat) is stated once truly and ``per_fact``
times falsely, each false statement cancelled by the verdict after it. The verdicts tell them
apart only to a reader (verdicts.py); the values must not tell them apart to code. Drawn one by
one around the truth, they would: a false year spread evenly on both sides of the true one
leaves the true year in the middle of its group, a birthplace drawn among places the person
never lived in makes "the one that is also a home" the true one, a teacher drawn from the
chapter's cast makes "the one not mentioned nearby" the true one, and code that tested the
world's own rules on each statement ("a founder is among the older half", "founded in the
founder's twenties to forties") would keep the one that obeys them.

So the k-th retracted statement of every fact states the k-th :class:`Alternative`: the one-off
facts of a whole other world, drawn by the process that drew the real ones. Every such draw is
uniform over a set that is the same in every world (world.py: a span of years before the story,
the whole cast, every place), so the six values of a fact, drawn one after another without
repeats (the truth first), are exchangeable: neither the order of the draws nor a rule of the
world tells the first from the others. (A founder from the older half of each world's own
births, founded 20 to 44 years after that birth, did: each later draw avoided values the
earlier worlds made likely.) Teacher, maker and founding facts are told only once the whole cast
is in the story (world.py), so any person can be named in them. Tiny documents whose cast is too
small for six different values repeat an alternative, never the true value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .world import World, birth_year, founding_year, other_person

_TRIES = 50


@dataclass
class Alternative:
    births: dict[int, tuple[int, int]] = field(default_factory=dict)  # person -> (year, place)
    mentors: dict[int, int] = field(default_factory=dict)  # person -> teacher
    makers: dict[int, int] = field(default_factory=dict)  # artefact -> maker
    foundings: dict[int, tuple[int, int]] = field(default_factory=dict)  # org -> (founder, year)
    seats: dict[int, int] = field(default_factory=dict)  # organisation -> place


Stated = dict[tuple[str, int], set]
"""(fact, subject) -> every value the text gives that fact: the true one and the alternatives'.
Facts: "birth" (place), "birth year", "mentor", "maker", "founding" (founder), "founding year",
"seat"."""


def draw_alternatives(
    world: World, rnd: Callable[[], float], n: int
) -> tuple[list[Alternative], Stated]:
    """``n`` alternative worlds of one-off facts, all different from the real one and from
    each other fact by fact, and every value each fact takes in the text."""
    taken: Stated = {}

    def fresh(key: tuple[str, int], truth, draw: Callable[[], object]):
        """A value of ``draw`` unlike the truth and the earlier alternatives of ``key``; an
        earlier alternative again only when the cast is too small for anything else."""
        seen = taken.setdefault(key, {truth})
        for _ in range(_TRIES):
            value = draw()
            if value not in seen:
                seen.add(value)
                return value
        for _ in range(_TRIES):
            value = draw()
            if value != truth:
                return value
        raise RuntimeError(f"no alternative to {truth!r} for {key}")

    return [_one(world, rnd, fresh) for _ in range(n)], taken


def _one(world: World, rnd, fresh) -> Alternative:
    n_people, n_places, start = len(world.people), len(world.places), world.start_year
    alt = Alternative()
    for p in world.people:
        year = fresh(("birth year", p.id), p.birth_year, lambda: birth_year(rnd, start))
        place = fresh(("birth", p.id), p.birthplace, lambda: int(rnd() * n_places))
        alt.births[p.id] = (year, place)
        if p.mentor is not None:
            teacher = fresh(
                ("mentor", p.id), p.mentor, lambda p=p: other_person(rnd, p.id, n_people)
            )
            alt.mentors[p.id] = teacher
    for a in world.artefacts:
        alt.makers[a.id] = fresh(("maker", a.id), a.maker, lambda: int(rnd() * n_people))
    for g in world.organisations:
        founder = fresh(("founding", g.id), g.founder, lambda: int(rnd() * n_people))
        founded = fresh(("founding year", g.id), g.founded_year, lambda: founding_year(rnd, start))
        alt.foundings[g.id] = (founder, founded)
        alt.seats[g.id] = fresh(("seat", g.id), g.seat, lambda: int(rnd() * n_places))
    return alt
