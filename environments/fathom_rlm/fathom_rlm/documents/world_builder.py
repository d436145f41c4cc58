"""Building the world of a seed: cast, places, organisations, objects and their dated histories.

The helpers draw from one ``random.Random`` in a fixed order, so a seed always gives the same
world (``world.py`` holds what is built).
"""

from __future__ import annotations

import bisect
import random

from .contested import plan_contested
from .grammar_tables import EPITHET_ADJECTIVES, EPITHET_NOUNS
from .names import NameGrammar
from .world import (
    CHAPTER_TOKENS,
    NICKNAMES,
    ORG_KINDS,
    ROLES,
    THINGS,
    Artefact,
    Event,
    Organisation,
    Person,
    Place,
    World,
    birth_year,
    founding_year,
    other_person,
)

_ID_LETTERS = "BCDFGHJKLMNPQRSTVWXZ"


def _id_token(rng: random.Random, taken: set[str]) -> str:
    while True:
        token = (
            _ID_LETTERS[int(rng.random() * 20)]
            + _ID_LETTERS[int(rng.random() * 20)]
            + "-"
            + str(1000 + int(rng.random() * 9000))
        )
        if token not in taken:
            taken.add(token)
            return token


def _weighted_index(rng: random.Random, cumulative: list[float], exclude: int = -1) -> int:
    total = cumulative[-1]
    while True:
        i = bisect.bisect_right(cumulative, rng.random() * total)
        i = min(i, len(cumulative) - 1)
        if i != exclude:
            return i


def cast_sizes(doc_tokens: int) -> tuple[int, int, int, int]:
    """People, places, organisations, artefacts for a document of ``doc_tokens`` tokens.

    The cast grows with length so that on long documents each name recurs dozens of times
    without the short documents drowning in needles.
    """
    people = 5 + doc_tokens // 2300
    places = 10 + doc_tokens // 7000
    orgs = 5 + doc_tokens // 16000
    artefacts = 5 + doc_tokens // 6000
    return people, places, orgs, artefacts


def build_world(seed: int, doc_tokens: int, rng: random.Random) -> World:
    """The world of ``seed``. The helpers draw from ``rng`` in a fixed order: reordering
    them changes every world."""
    n_ch = max(4, round(doc_tokens / CHAPTER_TOKENS))
    names = NameGrammar(rng)
    n_people, n_places, n_orgs, n_arts = cast_sizes(doc_tokens)
    start_year = 1700 + int(rng.random() * 150)
    dates = _chapter_dates(rng, start_year, n_ch)
    places, cum_places = _places(rng, names, n_places)
    ids_taken: set[str] = set()
    people = _people(rng, names, n_people, n_places, start_year, n_ch, ids_taken)
    events: list[Event] = []
    _homes_and_static_facts(rng, people, cum_places, n_ch, events)
    orgs = _organisations(rng, names, people, n_orgs, n_places, start_year, n_ch, events)
    _employment(rng, people, n_orgs, n_ch, events)
    arts = _artefacts(rng, names, people, n_arts, n_ch, ids_taken, events)
    _give_epithets(rng, people)
    # Ties in time are broken by kind and ids so the order never depends on anything else.
    events.sort(key=lambda e: (e.time, e.kind, e.subject, e.index))
    world = World(
        seed=seed,
        n_chapters=n_ch,
        start_year=start_year,
        chapter_dates=dates,
        people=people,
        places=places,
        organisations=orgs,
        artefacts=arts,
        events=events,
    )
    _add_namesakes(names, world)
    world.contested = plan_contested(world, doc_tokens, rng)
    return world


def _chapter_dates(rng: random.Random, start_year: int, n_ch: int) -> list[tuple[int, int]]:
    """Each chapter a month or three after the previous one."""
    dates: list[tuple[int, int]] = []
    months = int(rng.random() * 12)
    for _ in range(n_ch):
        dates.append((start_year + months // 12, months % 12))
        months += 1 + int(rng.random() * 3)
    return dates


def _places(
    rng: random.Random, names: NameGrammar, n_places: int
) -> tuple[list[Place], list[float]]:
    """Places (some one edit from another) and their cumulative move-destination weights."""
    places: list[Place] = []
    for i in range(n_places):
        near = places[int(rng.random() * len(places))].name if places else None
        name = names.near_miss(near) if near and rng.random() < 0.15 else None
        places.append(Place(i, name or names.place_name(), 0.0))
    # Zipf-like popularity over a random order: a few hubs collect most arrivals.
    order = list(range(n_places))
    rng.shuffle(order)
    for rank, pid in enumerate(order):
        places[pid].weight = 1.0 / (rank + 1) ** 0.7
    cum_places: list[float] = []
    acc = 0.0
    for p in places:
        acc += p.weight
        cum_places.append(acc)
    return places, cum_places


def _people(
    rng: random.Random,
    names: NameGrammar,
    n_people: int,
    n_places: int,
    start_year: int,
    n_ch: int,
    ids_taken: set[str],
) -> list[Person]:
    nicknames = list(NICKNAMES)
    rng.shuffle(nicknames)
    people: list[Person] = []
    for i in range(n_people):
        near_of = None
        family = None
        if people and rng.random() < 0.15:
            near_of = int(rng.random() * len(people))
            family = names.near_miss(people[near_of].family)
            if family is None:
                near_of = None
        she = rng.random() < 0.5
        nickname = nicknames.pop() if nicknames and rng.random() < 0.35 else None
        people.append(
            Person(
                id=i,
                given=names.given_name(),
                family=family or names.family_name(),
                pronoun="she" if she else "he",
                honorific="Mistress" if she else "Master",
                nickname=nickname,
                birth_year=birth_year(rng.random, start_year),
                birthplace=int(rng.random() * n_places),
                permit=_id_token(rng, ids_taken),
                intro=rng.random() * max(1.0, n_ch * 0.3),
                near_miss_of=near_of,
            )
        )
    return people


def _homes_and_static_facts(
    rng: random.Random, people: list[Person], cum_places: list[float], n_ch: int, events: list
) -> None:
    """Mentor, homes over time, and when birth, permit and mentor are told."""
    n = len(people)
    cast_in = _cast_in(people)
    for p in people:
        # Mentor: anyone else. No rule ties a teacher to the pupil's age: the false teachers of
        # retracted statements are drawn the same way (alternatives.py), and a rule they broke
        # would tell them from the true one without reading.
        p.mentor = other_person(rng.random, p.id, n)
        home = _weighted_index(rng, cum_places)
        p.residence.append((p.intro, home))
        n_moves = 2 + int(rng.random() * 5)
        times = sorted(p.intro + rng.random() * (n_ch - p.intro) for _ in range(n_moves))
        for t in times:
            if t <= p.residence[-1][0]:
                continue
            home = _weighted_index(rng, cum_places, exclude=home)
            p.residence.append((t, home))
        for k, (t, _) in enumerate(p.residence):
            events.append(Event(t, "residence", p.id, k))
        events.append(Event(_later(rng, p.intro, n_ch), "birth", p.id))
        events.append(Event(_later(rng, p.intro, n_ch), "permit", p.id))
        if p.mentor is not None:
            events.append(Event(_later(rng, cast_in, n_ch), "mentor", p.id))


def _organisations(
    rng: random.Random,
    names: NameGrammar,
    people: list[Person],
    n_orgs: int,
    n_places: int,
    start_year: int,
    n_ch: int,
    events: list,
) -> list[Organisation]:
    orgs: list[Organisation] = []
    n_people = len(people)
    cast_in = _cast_in(people)
    for i in range(n_orgs):
        founder = int(rng.random() * n_people)
        founded = founding_year(rng.random, start_year)
        org = Organisation(
            id=i,
            root=names.word(2),
            kind=ORG_KINDS[int(rng.random() * len(ORG_KINDS))],
            founder=founder,
            founded_year=founded,
            seat=int(rng.random() * n_places),
        )
        orgs.append(org)
        events.append(Event(_later(rng, cast_in, n_ch), "founding", org.id))
        events.append(Event(rng.random() * n_ch, "seat", org.id))
    return orgs


def _employment(
    rng: random.Random, people: list[Person], n_orgs: int, n_ch: int, events: list
) -> None:
    for p in people:
        org = int(rng.random() * n_orgs)
        p.employment.append((p.intro, org, ROLES[int(rng.random() * len(ROLES))]))
        n_jobs = 1 + int(rng.random() * 3)
        times = sorted(p.intro + rng.random() * (n_ch - p.intro) for _ in range(n_jobs))
        for t in times:
            if t <= p.employment[-1][0]:
                continue
            org = (org + 1 + int(rng.random() * (n_orgs - 1))) % n_orgs
            p.employment.append((t, org, ROLES[int(rng.random() * len(ROLES))]))
        for k, (t, _, _) in enumerate(p.employment):
            events.append(Event(t, "employment", p.id, k))


def _artefacts(
    rng: random.Random,
    names: NameGrammar,
    people: list[Person],
    n_arts: int,
    n_ch: int,
    ids_taken: set[str],
    events: list,
) -> list[Artefact]:
    arts: list[Artefact] = []
    n_people = len(people)
    intro_order = sorted(range(n_people), key=lambda j: (people[j].intro, j))
    intro_sorted = [people[j].intro for j in intro_order]
    cast_in = _cast_in(people)
    for i in range(n_arts):
        maker = int(rng.random() * n_people)
        first_owner = int(rng.random() * n_people)
        t0 = people[first_owner].intro + rng.random() * max(0.5, n_ch * 0.3)
        t0 = min(t0, n_ch - 0.5)
        art = Artefact(
            id=i,
            root=names.word(2),
            thing=THINGS[int(rng.random() * len(THINGS))],
            maker=maker,
            mark=_id_token(rng, ids_taken),
            intro=t0,
        )
        art.owners.append((t0, first_owner))
        n_transfers = 1 + int(rng.random() * 4)
        times = sorted(t0 + rng.random() * (n_ch - t0) for _ in range(n_transfers))
        owner = first_owner
        for t in times:
            if t <= art.owners[-1][0]:
                continue
            # Only people already in the story can receive an object.
            n_present = bisect.bisect_left(intro_sorted, t)
            if n_present < 2:
                continue
            new = intro_order[int(rng.random() * n_present)]
            if new == owner:
                continue
            owner = new
            art.owners.append((t, owner))
        arts.append(art)
        for k, (t, _) in enumerate(art.owners):
            events.append(Event(t, "owner", art.id, k))
        events.append(Event(_later(rng, max(t0, cast_in), n_ch), "maker", art.id))
        events.append(Event(_later(rng, t0, n_ch), "mark", art.id))
    return arts


def _give_epithets(rng: random.Random, people: list[Person]) -> None:
    """About half of the people without a nickname get a unique epithet."""
    pairs = [(a, n) for a in EPITHET_ADJECTIVES for n in EPITHET_NOUNS]
    taken: set[tuple[str, str]] = set()
    for p in people:
        if p.nickname or rng.random() >= 0.5:
            continue
        for _ in range(8):
            pair = pairs[int(rng.random() * len(pairs))]
            if pair not in taken:
                taken.add(pair)
                p.epithet = f"the {pair[0]} {pair[1]}"
                break


def _add_namesakes(names: NameGrammar, world: World) -> None:
    for p in world.people:
        family = names.near_miss(p.family)
        if family is not None:
            world.namesake_family[p.id] = family
    for a in world.artefacts:
        root = names.near_miss(a.root)
        if root is not None:
            world.namesake_art_root[a.id] = root
    for g in world.organisations:
        root = names.near_miss(g.root)
        if root is not None:
            world.namesake_org_root[g.id] = root


def _cast_in(people: list[Person]) -> float:
    """When the last person enters the story. Facts naming a second person (teacher, maker,
    founder) are told after it, so the false values of their retracted statements can be
    anyone in the cast (alternatives.py) without naming someone the story has not met."""
    return max(p.intro for p in people)


def _later(rng: random.Random, start: float, n_ch: int) -> float:
    """A time uniformly between ``start`` and the end of the story."""
    return start + rng.random() * (n_ch - start)
