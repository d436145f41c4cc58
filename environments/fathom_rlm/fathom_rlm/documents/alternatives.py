"""The false values of retracted statements, drawn as whole alternative worlds.

Every one-off fact (birth, mentor, maker, founding, seat) is stated once truly and ``per_fact``
times falsely, each false statement cancelled by the sentence after it. Its follower class tells
them apart only to a reader (followers.py); the values must not tell them apart to code. Drawn
one by one around the truth, they would: a false year spread evenly on both sides of the true
one leaves the true year in the middle of its group, a birthplace drawn among places the person
never lived in makes "the one that is also a home" the true one, a teacher drawn from the
chapter's cast makes "the one not mentioned nearby" the true one. And since each follower class
runs through every fact of a document, code that tested the world's own rules on each class
("a founder is among the older half", "founded in the founder's twenties to forties") would
keep the class that obeys them.

So the k-th retracted statement of every fact states the k-th :class:`Alternative`: the one-off
facts of a whole other world, drawn by the process that drew the real ones and obeying its rules
among themselves (founders from the older half under its own births, founded 20 to 44 years
after the founder's birth). Such facts are told only once the whole cast is in the story
(world.py), so any person can be named in them.
The six values of one fact (the true one and five alternatives) are all different, as they
would be if each had been drawn first; tiny documents whose cast is too small for that repeat
an alternative, never the true value.
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

    def fresh(key: tuple[str, int], truth, draws):
        """A value unlike the truth and the earlier alternatives of ``key``, from the first of
        ``draws`` that yields one. Never the truth; an earlier alternative again only when the
        cast is too small for anything else."""
        seen = taken.setdefault(key, {truth})
        for draw in draws:
            for _ in range(_TRIES):
                value = draw()
                if value not in seen:
                    seen.add(value)
                    return value
        for _ in range(_TRIES):
            value = draws[-1]()
            if value != truth:
                seen.add(value)
                return value
        raise RuntimeError(f"no alternative to {truth!r} for {key}")

    return [_one(world, rnd, fresh) for _ in range(n)], taken


def _one(world: World, rnd, fresh) -> Alternative:
    people, n_people, n_places = world.people, len(world.people), len(world.places)
    alt = Alternative()
    born: dict[int, int] = {}

    year = [lambda: birth_year(rnd, world.start_year)]
    for p in people:
        born[p.id] = fresh(("birth year", p.id), p.birth_year, year)
        place = fresh(("birth", p.id), p.birthplace, [lambda: int(rnd() * n_places)])
        alt.births[p.id] = (born[p.id], place)
    for p in people:
        if p.mentor is not None:
            alt.mentors[p.id] = fresh(
                ("mentor", p.id),
                p.mentor,
                [lambda p=p: other_person(rnd, p.id, n_people)],
            )
    for a in world.artefacts:
        alt.makers[a.id] = fresh(("maker", a.id), a.maker, [lambda: int(rnd() * n_people)])
    seniors = sorted(range(n_people), key=lambda j: (born[j], j))[: max(1, n_people // 2)]
    for g in world.organisations:
        founder = fresh(
            ("founding", g.id),
            g.founder,
            [lambda: seniors[int(rnd() * len(seniors))], lambda: int(rnd() * n_people)],
        )
        founded = fresh(
            ("founding year", g.id),
            g.founded_year,
            [lambda f=founder: founding_year(rnd, world.start_year, born[f])],
        )
        alt.foundings[g.id] = (founder, founded)
        alt.seats[g.id] = fresh(("seat", g.id), g.seat, [lambda: int(rnd() * n_places)])
    return alt
