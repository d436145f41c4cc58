"""The structured world a document is rendered from.

Everything a question can ask is decided here, before any text exists: who lives where and when,
who owns what, who works for whom. Relations that change keep their full history as
``(time, value)`` entries, where ``time`` is a float whose integer part is the chapter index, so
the order of two events in the same chapter is also fixed. Gold answers are read from these
histories, never from the rendered text.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

Key = tuple[str, int, int]  # (relation, subject id, index in its history): one fact
CHAPTER_TOKENS = 1500  # one chapter fits comfortably inside one ~3K-token sub-call slice

ROLES = (
    "clerk", "cartographer", "bookkeeper", "courier", "surveyor", "assayer", "glassblower",
    "cooper", "archivist", "steward", "river pilot", "chandler", "scribe", "engraver", "tanner",
    "dyer", "mason", "apothecary", "notary", "weighmaster", "boatwright", "ropemaker",
    "locksmith", "translator",
)  # fmt: skip
ORG_KINDS = (
    "Guild", "Company", "Compact", "League", "Lodge", "Syndicate", "Circle", "Assembly",
    "Fellowship", "Exchange", "Trading House", "Society",
)  # fmt: skip
THINGS = (
    "Lantern", "Astrolabe", "Chalice", "Compass", "Harp", "Clock", "Sextant", "Mirror", "Seal",
    "Tapestry", "Globe", "Lute", "Brooch", "Casket", "Spyglass", "Hourglass", "Inkstand",
    "Censer", "Bell", "Loom", "Chessboard", "Music Box", "Map Case", "Reliquary", "Dagger",
    "Tankard", "Orrery", "Sundial", "Quill Case", "Hunting Horn",
)  # fmt: skip
NICKNAMES = (
    "the Heron", "the Wren", "the Otter", "the Badger", "the Magpie", "the Kestrel", "the Marten",
    "the Stoat", "the Finch", "the Crane", "the Lark", "the Weasel", "the Hare", "the Plover",
    "the Rook", "the Ferret", "the Curlew", "the Linnet", "the Vole", "the Gannet", "the Teal",
    "the Shrike", "the Osprey", "the Sparrow", "the Owl", "the Fox", "the Moth", "the Pike",
    "the Eel", "the Lynx", "the Bittern", "the Dormouse",
)  # fmt: skip
MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip


@dataclass
class Person:
    id: int
    given: str
    family: str
    pronoun: str  # "she" or "he"
    honorific: str  # "Mistress" or "Master"
    nickname: str | None
    birth_year: int
    birthplace: int  # place id
    permit: str  # ID-like token, unique in the world
    intro: float  # time of first appearance
    mentor: int | None = None  # person id
    residence: list[tuple[float, int]] = field(default_factory=list)  # (time, place id)
    employment: list[tuple[float, int, str]] = field(default_factory=list)  # (time, org, role)
    near_miss_of: int | None = None  # person whose family name this one nearly shares
    epithet: str | None = None  # "the lame fiddler": an alias introduced once, used later

    @property
    def alias(self) -> str | None:
        """The one alias the text introduces for this person (nickname, else epithet)."""
        return self.nickname or self.epithet

    @property
    def name(self) -> str:
        return f"{self.given} {self.family}"

    @property
    def formal(self) -> str:
        return f"{self.honorific} {self.family}"

    @property
    def possessive(self) -> str:
        return "her" if self.pronoun == "she" else "his"

    @property
    def objective(self) -> str:
        return "her" if self.pronoun == "she" else "him"

    def aliases(self) -> list[str]:
        out = [self.formal, self.given, self.family]
        if self.alias:
            out.append(self.alias)
        return out


@dataclass
class Place:
    id: int
    name: str
    weight: float  # popularity as a move destination (a few hubs, many quiet places)


@dataclass
class Organisation:
    id: int
    root: str
    kind: str
    founder: int  # person id
    founded_year: int
    seat: int  # place id

    @property
    def name(self) -> str:
        return f"the {self.root} {self.kind}"

    def aliases(self) -> list[str]:
        return [f"{self.root} {self.kind}", self.root]


@dataclass
class Artefact:
    id: int
    root: str
    thing: str
    maker: int  # person id
    mark: str  # registry mark, ID-like, unique in the world
    intro: float
    owners: list[tuple[float, int]] = field(default_factory=list)  # (time, person id)

    @property
    def name(self) -> str:
        return f"the {self.root} {self.thing}"

    def aliases(self) -> list[str]:
        return [f"{self.root} {self.thing}"]


@dataclass(frozen=True)
class Event:
    """One assertion the renderer must place in the text, at chapter ``int(time)``.

    ``kind`` names the relation; ``subject`` is the entity id; ``index`` is the position in the
    subject's history for changing relations (0 = the initial state), else 0.
    """

    time: float
    kind: str
    subject: int
    index: int = 0

    @property
    def chapter(self) -> int:
        return int(self.time)

    @property
    def key(self) -> Key:
        return (self.kind, self.subject, self.index)


# A chain's letters: A = maker of an object, F = founder of an organisation, M = teacher,
# B = birthplace, Y = birth year; a chain starting with M starts from a person.
CHAIN_RELATIONS = {
    "AB": "maker_birthplace",
    "AM": "maker_mentor",
    "AMB": "maker_mentor_birthplace",
    "FB": "founder_birthplace",
    "FM": "founder_mentor",
    "MB": "mentor_birthplace",
    "MY": "mentor_birth_year",
}


@dataclass(frozen=True)
class Chain:
    """A multi_hop question's path: its letters, where it starts, and the fact of each hop."""

    letters: str
    start: int  # artefact id (A), organisation id (F) or person id (M)
    hops: tuple[Key, ...]

    @property
    def relation(self) -> str:
        return CHAIN_RELATIONS[self.letters]


@dataclass(frozen=True)
class Contested:
    """A document's question plan (contested.py): what each family may ask, and so which
    one-off facts the text contests."""

    singles: tuple[Key, ...] = ()  # single_hop: one fact each
    chains: tuple[Chain, ...] = ()  # multi_hop
    pairs: tuple[tuple[Key, Key], ...] = ()  # comparison: two birth or two founding years

    @cached_property
    def keys(self) -> frozenset[Key]:
        """Every contested fact."""
        out = set(self.singles)
        out.update(chain.hops[-1] for chain in self.chains)
        for pair in self.pairs:
            out.update(pair)
        return frozenset(out)


@dataclass
class World:
    seed: int
    n_chapters: int
    start_year: int
    chapter_dates: list[tuple[int, int]]  # (year, month index 0-11) per chapter
    people: list[Person]
    places: list[Place]
    organisations: list[Organisation]
    artefacts: list[Artefact]
    events: list[Event]  # sorted by time
    # Text-only near-namesakes (one edit away): person id -> family name, artefact and
    # organisation id -> root. No entity of the world has these names; distractors use them.
    namesake_family: dict[int, str] = field(default_factory=dict)
    namesake_art_root: dict[int, str] = field(default_factory=dict)
    namesake_org_root: dict[int, str] = field(default_factory=dict)
    contested: Contested = field(default_factory=lambda: Contested())

    def date_text(self, chapter: int) -> str:
        year, month = self.chapter_dates[chapter]
        return f"{MONTHS[month]} {year}"

    # State queries: "value in force at time t" (last entry with time <= t).
    @staticmethod
    def _at(history: list, t: float):
        times = [h[0] for h in history]
        i = bisect.bisect_right(times, t) - 1
        return history[i] if i >= 0 else None

    def residence_at(self, person: int, t: float) -> int | None:
        entry = self._at(self.people[person].residence, t)
        return None if entry is None else entry[1]

    def owner_at(self, artefact: int, t: float) -> int | None:
        entry = self._at(self.artefacts[artefact].owners, t)
        return None if entry is None else entry[1]

    def employer_at(self, person: int, t: float) -> tuple[int, str] | None:
        entry = self._at(self.people[person].employment, t)
        return None if entry is None else (entry[1], entry[2])


# The draws of the one-off facts, shared with the alternative worlds of retracted statements
# (alternatives.py) and the hard negatives. Each is uniform over a set that is the same in every
# world (a span of years before the story, the whole cast, every place), so the six values a
# one-off fact takes in the text, drawn one after another without repeats, are exchangeable: no
# order of draws and no rule of the world singles out the first (true) one. A founder drawn from
# the older half of each world's own births, and a founding year tied to that founder's birth,
# made the later draws avoid the earlier ones' likely values, and a likelihood over the draw
# orders found the true class in 0.30 of held-out 16K documents (docs/reward_audit.md, "Values").
BIRTH_SPAN = 31  # birth years lie 45 to 75 years before the story starts
FOUNDING_SPAN = 25  # founded 1 to 25 years before it: every founder was at least 20


def birth_year(rnd: Callable[[], float], start_year: int) -> int:
    return start_year - 45 - int(rnd() * BIRTH_SPAN)


def founding_year(rnd: Callable[[], float], start_year: int) -> int:
    return start_year - 1 - int(rnd() * FOUNDING_SPAN)


def other_person(rnd: Callable[[], float], pid: int, n_people: int) -> int:
    """Anyone but ``pid``, uniformly."""
    return (pid + 1 + int(rnd() * (n_people - 1))) % n_people
