"""Turn a :class:`World` into narrative text and remember where every assertion landed.

Each event of the world becomes one *needle*: a sentence (or an antecedent sentence plus a
sentence that refers back with a pronoun) drawn from at least five paraphrases of its relation.
Needles are interleaved, in story order, with filler drawn from the same entities and the same
sentence shapes: reminders of the current state, superseded past states, negations, visits that
are not moves, the same relations about other people, look-alike ID tokens and names. A needle
therefore cannot be told apart by style; only reading tells which sentence answers a question.

The renderer records the character span of every needle, keyed by ``Event.key``.
"""

from __future__ import annotations

import bisect
import itertools
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

from .world import ROLES, Event, World

# ---------------------------------------------------------------------------------------------
# Needle paraphrases. {S} is the subject (name, formal name, or a pronoun after an antecedent);
# {s}/{sp}/{so} are its pronouns; other fields are filled per relation. Templates that start with
# {S} may be rendered in pronoun form.

NEEDLES: dict[str, tuple[str, ...]] = {
    "residence0": (
        "{S} had lived in {P} for as long as anyone could remember.",
        "{S} kept a house in {P} in those days.",
        "Home for {S} was {P}, where {s} rented two rooms above a chandler's shop.",
        "{S} was then a resident of {P}.",
        "{S} lived at the edge of {P}, near the old weir.",
        "{P} was where {S} had put down roots at the start of this account.",
    ),
    "residence": (
        "{S} packed up {sp} belongings and moved to {P}.",
        "{S} settled in {P} that season.",
        "{S} took lodgings in {P} and did not come back.",
        "{S} relocated to {P} before the month was out.",
        "{S} left {Q} for good and made a new home in {P}.",
        "{S} went to live in {P}.",
        "By the end of the month {S} had set up house in {P}.",
    ),
    "employment0": (
        "{S} worked as {R} for {G}.",
        "{S} was {R} in the service of {G}.",
        "{G} employed {S} as {R}.",
        "{S} earned {sp} wage as {R} with {G}.",
        "{S} held a post as {R} at {G}.",
    ),
    "employment": (
        "{S} left {H} and took a post as {R} with {G}.",
        "{S} signed on with {G} as {R}.",
        "{G} hired {S} as {R}.",
        "{S} quit {H}; within the week {s} was {R} for {G}.",
        "{S} entered the service of {G} as {R}.",
        "{S} went over to {G}, taking work as {R}.",
    ),
    "owner0": (
        "{O} belonged to {Y}.",
        "{Y} owned {O} at that time.",
        "{O} was in the keeping of {Y}.",
        "{Y} kept {O} in a locked chest.",
        "{O} was the property of {Y}.",
    ),
    "owner": (
        "{X} sold {O} to {Y}.",
        "{X} gave {O} to {Y} as a gift.",
        "{Y} bought {O} from {X}.",
        "{X} lost {O} to {Y} in a wager.",
        "{O} passed from {X} to {Y}.",
        "{Y} won {O} off {X} at cards.",
        "{X} handed {O} over to {Y} to settle a debt.",
    ),
    "maker": (
        "{O} was the work of {M}.",
        "{M} made {O}.",
        "It was {M} who crafted {O}.",
        "{O} came from the workbench of {M}.",
        "{M} built {O} over a single winter.",
        "{M} had fashioned {O} long before.",
    ),
    "mentor": (
        "{S} learned {sp} trade under {M}.",
        "{S} was apprenticed to {M} as a youth.",
        "{M} took {N} on as a pupil.",
        "{S} studied for six years with {M}.",
        "{S} owed {sp} training to {M}.",
        "{M} had taught {N} everything worth knowing.",
    ),
    "birth": (
        "{S} was born in {P} in {Y4}.",
        "{S} came into the world at {P} in the year {Y4}.",
        "{S} first drew breath in {P}, in {Y4}.",
        "The parish roll of {P} records the birth of {N} in {Y4}.",
        "{S}, a native of {P}, was born in {Y4}.",
        "{S} was a child of {P}, born there in {Y4}.",
    ),
    "founding": (
        "{G} was founded by {F} in {Y4}.",
        "{F} established {G} in {Y4}.",
        "{G} owed its existence to {F}, who set it up in {Y4}.",
        "In {Y4} {F} started {G}.",
        "{F} created {G} in {Y4}.",
    ),
    "seat": (
        "{G} kept its hall in {P}.",
        "The headquarters of {G} stood in {P}.",
        "{G} ran its affairs from a building in {P}.",
        "{G} had its seat in {P}.",
        "{P} was home to the offices of {G}.",
    ),
    "permit": (
        "Permit {ID} was issued to {N}.",
        "{S} carried a travel permit numbered {ID}.",
        "The clerk at {P} stamped permit {ID} for {N}.",
        "The papers of {N} were logged under permit {ID}.",
        "{S} held travel permit {ID}.",
    ),
    "mark": (
        "{O} was entered in the registry under mark {ID}.",
        "The registrar logged {O} as item {ID}.",
        "{O} bears the registry mark {ID}.",
        "Mark {ID} belongs to {O}.",
        "{O} was catalogued as {ID}.",
    ),
}

# Sentences that name a person and nothing else: antecedents for pronoun needles and filler.
ACTIVITIES = (
    "{S} came in off the north road late on a market day.",
    "{S} had been unwell for most of the winter.",
    "{S} was not a patient person.",
    "{S} spent the morning mending a torn sail.",
    "{S} kept odd hours that year.",
    "Few people understood {N} at first.",
    "{S} had a habit of humming while working.",
    "{S} was seen at the ferry landing before dawn.",
    "Everyone agreed that {N} drove a hard bargain.",
    "{S} counted every coin twice.",
    "{S} said little and listened a great deal.",
    "{S} walked everywhere, whatever the weather.",
)

FILLER: dict[str, tuple[str, ...]] = {
    # Current state, consistent with the world at the start of the chapter.
    "lives": (
        "{S}, who was living in {P} at the time, heard the news late.",
        "{S} was still living in {P} then.",
        "From {sp} rooms in {P}, {N} could see the river.",
        "Neighbours in {P} saw {N} at the well most mornings.",
        "{S} walked home to {P} through the rain.",
    ),
    "works": (
        "{S} was still {R} with {G}.",
        "{S} kept long hours at {G}.",
        "{G} paid {N} late again.",
        "{S} complained about the ledgers at {G}.",
        "As {R}, {N} rarely had a free evening.",
    ),
    "keeps": (
        "{Y} kept {O} wrapped in oilcloth.",
        "{O} sat on a shelf in the house of {Y}.",
        "{Y} showed {O} to visitors only on feast days.",
        "{Y} would not lend {O} to anyone.",
        "{O} was cleaned and polished by {Y} every week.",
    ),
    # Superseded facts: true of the past, not of now.
    "lived": (
        "Years earlier {N} had lived in {P}.",
        "{S} still had friends in {P}, where {s} used to live.",
        "{S} sometimes missed the old house in {P}.",
        "Before all this, {N} had been a resident of {P}.",
    ),
    "owned": (
        "{O} had once belonged to {Y}.",
        "{Y} no longer had {O} and rarely spoke of it.",
        "Some remembered {O} from the days when {Y} owned it.",
    ),
    # Visits and errands: a person next to a place that is not their home.
    "visit": (
        "{S} spent two nights at an inn in {P}.",
        "{S} passed through {P} without stopping.",
        "{S} sent a letter to a cousin in {P}.",
        "{S} rode out to {P} for the horse fair.",
        "The road from {P} was flooded, so {N} turned back.",
        "{S} bought salt and lamp oil in {P}.",
        "{S} had business in {P} that week.",
        "{S} stopped in {P} to rest the horses.",
    ),
    "social": (
        "{S} and {X} shared a table at the inn.",
        "{S} wrote to {X} about the price of salt.",
        "{S} quarrelled with {X} over a debt of two crowns.",
        "{X} asked {N} to witness a contract.",
        "{S} refused to speak to {X} for a month.",
        "{X} and {N} were seen walking by the canal.",
        "{S} lent {X} a coat and never got it back.",
        "{X} sent {N} a basket of pears.",
    ),
    # Negations: false values, false for the whole story.
    "not_lived": (
        "{S} never lived in {P}, whatever the gossip claimed.",
        "Contrary to what some said, {N} did not move to {P}.",
        "{S} had never settled in {P} and never meant to.",
        "{S} was never a resident of {P}.",
        "{S} thought about taking rooms in {P} but never did.",
    ),
    "not_owned": (
        "{O} never belonged to {X}, though {X} coveted it.",
        "{X} tried to buy {O} and was refused.",
        "{O} was never in the keeping of {X}.",
        "{X} never owned {O}, whatever the pedlars said.",
        "{X} offered a fortune for {O} and did not get it.",
    ),
    "not_made": (
        "Contrary to rumour, {O} was not made by {X}.",
        "{X} never worked on {O}, despite the story going round.",
        "Some credited {X} with {O}, wrongly.",
        "{X} did not build {O}; that was a tavern tale.",
        "It was not {X} who crafted {O}, whatever the sign in the window said.",
    ),
    "not_taught": (
        "{X} never taught {N}, though the two were often confused.",
        "{S} was never apprenticed to {X}.",
        "People assumed {X} had trained {N}, but that was not so.",
        "{S} did not study with {X}, whatever was said.",
        "{S} never learned anything from {X}.",
    ),
    "not_worked": (
        "{S} never worked for {G}.",
        "{G} refused to hire {N}.",
        "{S} applied to {G} and was turned away.",
        "{S} was never on the books of {G}.",
        "{S} would not take a post with {G} at any price.",
    ),
    "not_born": (
        "Some believed {N} was born in {P}, but that was a mistake.",
        "{S} was not a native of {P}, whatever the accent suggested.",
        "{S} was not born in {P}, despite the rumour.",
        "People took {N} for a child of {P}, wrongly.",
        "{S} had no family in {P} at all.",
    ),
    # Atmosphere around places, organisations and objects.
    "place": (
        "Rain came early to {P} that month.",
        "The market at {P} was thin that season.",
        "A new bridge was begun at {P}.",
        "Fever went round {P} and closed the school for a week.",
        "The mill at {P} burned down and was rebuilt by spring.",
        "Wolves were heard in the hills above {P}.",
        "The bells of {P} rang for a wedding.",
        "Prices in {P} rose by half over the winter.",
    ),
    "org": (
        "{G} raised its fees again.",
        "A notice from {G} was nailed to the door of every inn.",
        "{G} lost a barge of timber to the spring flood.",
        "The accounts of {G} were audited and found wanting.",
        "{G} held its yearly feast, and nobody enjoyed it.",
        "Rumours of debt followed {G} all season.",
    ),
    "object": (
        "{O} was much talked about that winter.",
        "A pedlar claimed to have seen a copy of {O}.",
        "Nobody could agree on what {O} was worth.",
        "{O} needed repair after a hard frost.",
        "Children told stories about {O}.",
    ),
    "year": (
        "The bridge at {P} had stood since {Y4}.",
        "{S} often spoke of the hard winter of {Y4}.",
        "The floods of {Y4} were still remembered in {P}.",
        "A stone by the road to {P} was carved with the year {Y4}.",
        "{S} kept a coin minted in {Y4}.",
    ),
    "count": (
        "{S} bought {C} barrels of pitch.",
        "{S} counted {C} boats at the landing.",
        "{C} wagons left {P} before dawn.",
        "{S} owed money to {C} different people.",
        "The inn at {P} had {C} rooms, all taken.",
    ),
    "code": (
        "A crate stamped {ID} sat unclaimed on the quay at {P}.",
        "The ledger at {P} listed a permit {ID} that nobody could account for.",
        "A forged permit marked {ID} turned up in {P}.",
        "Customs at {P} held a bale tagged {ID} for a week.",
        "An old registry slip numbered {ID} was found behind a drawer.",
    ),
    "alias": (
        "{N}, whom the boatmen called {K}, had a long memory.",
        "Along the river, {N} was known simply as {K}.",
        "{K} was seen near {P} again.",
        "Nobody crossed {K} twice.",
        "{K} said nothing, as usual.",
    ),
    "activity": ACTIVITIES,
}

# How often each filler kind is drawn (relative). Kinds whose preconditions fail are skipped.
FILLER_WEIGHTS: dict[str, float] = {
    "lives": 5,
    "works": 4,
    "keeps": 3,
    "lived": 3,
    "owned": 2,
    "visit": 8,
    "social": 8,
    "not_lived": 3,
    "not_owned": 2,
    "not_made": 2,
    "not_taught": 2,
    "not_worked": 2,
    "not_born": 2,
    "place": 6,
    "org": 3,
    "object": 3,
    "year": 4,
    "count": 3,
    "code": 3,
    "alias": 3,
    "activity": 8,
}

NUMBER_WORDS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve",
)  # fmt: skip
SEASONS = ("Spring", "Summer", "Autumn", "Winter")
TITLE_PATTERNS = (
    "{P} in {Season}",
    "The Fair at {P}",
    "A Letter from {P}",
    "High Water",
    "Salt and Pitch",
    "The Long Road to {P}",
    "Debts and Promises",
    "Rain over {P}",
    "The Ledger",
    "Lamps in the Window",
)


def article(role: str) -> str:
    return ("an " if role[0] in "aeiou" else "a ") + role


@dataclass(frozen=True)
class Chapter:
    """One chapter: its number as printed ("Chapter 7"), its title, its date and char range."""

    index: int  # 0-based position
    number: int  # as printed in the heading
    title: str
    date: str
    start: int
    end: int


@dataclass
class RenderResult:
    text: str
    chapters: list[Chapter]
    spans: dict[tuple[str, int, int], tuple[int, int]]
    forms: dict[tuple[str, int, int], str]  # how the needle referred to its subject


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _mapping_template(template: str) -> str:
    """``template`` rewritten for ``%`` with a mapping; it renders exactly the same text.

    ``t % fields`` skips the keyword-argument copy and format-spec handling of
    ``t.format(**fields)`` and is about twice as fast; a 200K-token document formats ~14K
    sentences.
    """
    out: list[str] = []
    for literal, name, spec, conversion in string.Formatter().parse(template):
        out.append(literal.replace("%", "%%"))
        if name is not None:
            if spec or conversion or not name.isidentifier():
                raise ValueError(f"unsupported field {{{name}}} in {template!r}")
            out.append(f"%({name})s")
    return "".join(out)


def _mapping_templates(templates: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_mapping_template(t) for t in templates)


# The tables above in rendering form: same sentences in the same order, so the same draws.
_NEEDLES_M = {kind: _mapping_templates(ts) for kind, ts in NEEDLES.items()}
_FILLER_M = {kind: _mapping_templates(ts) for kind, ts in FILLER.items()}
_ACTIVITIES_M = _mapping_templates(ACTIVITIES)
_PRONOUN_LEAD = _mapping_template("{S}")  # needle templates that may take a pronoun subject


class Renderer:
    """Renders one world. One instance per document; all randomness from ``rng``.

    The text is a pure function of the sequence of draws from ``rng``, so any change to the
    order or number of draws (not only to the sentences) changes the generated bytes.
    """

    def __init__(self, world: World, rng: random.Random) -> None:
        self.w = world
        self.rng = rng
        self.rnd = rng.random
        w = world
        self.person_names = [p.name for p in w.people]
        self.person_formal = [p.formal for p in w.people]
        # Subject fields of each person by full name [0] and formal name [1], built once.
        # Shared between sentences: copy before adding fields.
        self.person_fields: list[tuple[dict[str, str], dict[str, str]]] = [
            (
                {"S": p.name, "N": p.name, "s": p.pronoun, "sp": p.possessive},
                {"S": p.formal, "N": p.formal, "s": p.pronoun, "sp": p.possessive},
            )
            for p in w.people
        ]
        # name, formal name, capitalised pronoun, pronoun, possessive, objective: for needles.
        self.person_refs = [
            (p.name, p.formal, _cap(p.pronoun), p.pronoun, p.possessive, p.objective)
            for p in w.people
        ]
        self.place_names = [p.name for p in w.places]
        self.org_names = [g.name for g in w.organisations]
        self.art_names = [a.name for a in w.artefacts]
        self.real_ids = {p.permit for p in w.people} | {a.mark for a in w.artefacts}
        self.all_ids = [p.permit for p in w.people] + [a.mark for a in w.artefacts]
        # Membership-only sets (never iterated) for negations: false for the whole story.
        self.lived_in = [{pl for _, pl in p.residence} | {p.birthplace} for p in w.people]
        self.worked_for = [{g for _, g, _ in p.employment} for p in w.people]
        self.owned_by = [{o for _, o in a.owners} for a in w.artefacts]
        self.res_times = [[t for t, _ in p.residence] for p in w.people]
        self.job_times = [[t for t, _, _ in p.employment] for p in w.people]
        self.own_times = [[t for t, _ in a.owners] for a in w.artefacts]
        self.intro_order = sorted(range(len(w.people)), key=lambda j: (w.people[j].intro, j))
        self.intro_sorted = [w.people[j].intro for j in self.intro_order]
        kinds = list(FILLER_WEIGHTS)
        self.filler_kinds = kinds
        cum, acc = [], 0.0
        for k in kinds:
            acc += FILLER_WEIGHTS[k]
            cum.append(acc)
        self.filler_cum = cum
        self.year_lo = w.start_year - 90
        self.year_span = 120
        fns = self._filler_functions()
        self.filler_fns: list[Callable[[], str | None]] = [fns[k] for k in kinds]

    # ---------------------------------------------------------------------- random draws
    def pick(self, seq):
        return seq[int(self.rnd() * len(seq))]  # one float draw: cheaper than rng.choice

    def pname(self, pid: int) -> str:
        """A person as another sentence element: mostly the full name, sometimes the formal."""
        return self.person_names[pid] if self.rnd() < 0.7 else self.person_formal[pid]

    def subject_fields(self, pid: int, allow_pronoun: bool) -> tuple[dict[str, str], str]:
        """Fields for a person subject and the reference form used (name/formal/pronoun)."""
        name, formal, cap_pronoun, pronoun, possessive, objective = self.person_refs[pid]
        r = self.rnd()
        if allow_pronoun and r < 0.3:
            form = "pronoun"
            ref = cap_pronoun
        elif r < 0.55:
            form = "formal"
            ref = formal
        else:
            form = "name"
            ref = name
        fields = {"S": ref, "N": ref, "s": pronoun, "sp": possessive, "so": objective}
        return fields, form

    # ------------------------------------------------------------------------------ needles
    def needle(self, ev: Event) -> tuple[str, str]:
        """Render one event; returns (text, reference form of its subject)."""
        w = self.w
        kind, sid, k = ev.kind, ev.subject, ev.index
        if kind in ("residence", "employment", "birth", "mentor", "permit"):
            key = kind + "0" if k == 0 and kind in ("residence", "employment") else kind
            template = self.pick(_NEEDLES_M[key])
            pronoun_ok = template.startswith(_PRONOUN_LEAD)
            fields, form = self.subject_fields(sid, pronoun_ok)
            p = w.people[sid]
            if kind == "residence":
                fields["P"] = self.place_names[p.residence[k][1]]
                if k:
                    fields["Q"] = self.place_names[p.residence[k - 1][1]]
            elif kind == "employment":
                _, org, role = p.employment[k]
                fields["G"] = self.org_names[org]
                fields["R"] = article(role)
                if k:
                    fields["H"] = self.org_names[p.employment[k - 1][1]]
            elif kind == "birth":
                fields["P"] = self.place_names[p.birthplace]
                fields["Y4"] = str(p.birth_year)
            elif kind == "mentor":
                fields["M"] = self.pname(p.mentor)
            else:  # permit
                fields["ID"] = p.permit
                fields["P"] = self.pick(self.place_names)
            if form == "pronoun":
                ante = dict(fields)
                ante["S"] = ante["N"] = self.person_names[sid]
                lead = self.pick(_ACTIVITIES_M) % ante
                return lead + " " + _cap(template % fields), form
            return _cap(template % fields), form
        if kind in ("owner", "maker", "mark"):
            a = w.artefacts[sid]
            key = "owner0" if kind == "owner" and k == 0 else kind
            fields = {"O": self.art_names[sid]}
            if kind == "owner":
                fields["Y"] = self.pname(a.owners[k][1])
                if k:
                    fields["X"] = self.pname(a.owners[k - 1][1])
            elif kind == "maker":
                fields["M"] = self.pname(a.maker)
            else:
                fields["ID"] = a.mark
            return _cap(self.pick(_NEEDLES_M[key]) % fields), "name"
        g = w.organisations[sid]  # founding / seat
        fields = {"G": self.org_names[sid]}
        if kind == "founding":
            fields["F"] = self.pname(g.founder)
            fields["Y4"] = str(g.founded_year)
        else:
            fields["P"] = self.place_names[g.seat]
        return _cap(self.pick(_NEEDLES_M[kind]) % fields), "name"

    # ------------------------------------------------------------------------------- filler
    def _set_chapter(self, c: int, event_people: list[int], event_arts: list[int]) -> None:
        w = self.w
        self.c = c
        # People introduced by the end of this chapter; at least the first few, so an opening
        # chapter is not one person's monologue.
        present = self.intro_order[: max(5, bisect.bisect_left(self.intro_sorted, c + 1))]
        cast = list(event_people)
        if present:
            for _ in range(6):
                cast.append(self.pick(present))
        if not cast:
            cast = [self.pick(range(len(w.people)))]
        self.cast = cast
        arts = list(event_arts)
        for _ in range(2):
            arts.append(int(self.rnd() * len(w.artefacts)))
        self.arts = arts
        self.places = [int(self.rnd() * len(w.places)) for _ in range(4)]
        self.orgs = [int(self.rnd() * len(w.organisations)) for _ in range(2)]

    def _state_index(self, times: list[float]) -> int:
        """Index of the entry in force at the chapter start, or -1 if the relation changes
        inside this chapter (a reminder could then contradict a needle) or is not yet set."""
        c = self.c
        i = bisect.bisect_left(times, c)
        if i < len(times) and times[i] < c + 1:
            return -1
        return i - 1

    def _filler_functions(self) -> dict[str, Callable[[], str | None]]:
        """One closure per filler kind, keyed like ``FILLER_WEIGHTS``.

        Each returns a sentence, or None when its precondition fails (the caller then draws
        another kind). Each kind draws in a fixed order; reordering draws, even where it looks
        harmless, changes every later byte of the document.

        This is the innermost loop of generation (~14K calls for 200K tokens), so the closures
        bind everything that is fixed for the document as local names, draw with inline
        ``seq[int(rnd() * len(seq))]`` (the same single draw as :meth:`pick`, without the call)
        and format %-templates from prebuilt person fields. The chapter's cast, objects,
        places and organisations are read from ``self`` (set by :meth:`_set_chapter`).
        """
        rnd = self.rnd
        w = self.w
        state_index = self._state_index
        person_names, person_formal = self.person_names, self.person_formal
        person_fields = self.person_fields
        place_names, org_names, art_names = self.place_names, self.org_names, self.art_names
        n_places, n_orgs, n_people = len(place_names), len(org_names), len(w.people)
        res_times, job_times, own_times = self.res_times, self.job_times, self.own_times
        homes = [[pl for _, pl in p.residence] for p in w.people]
        posts = [[(org_names[g], article(role)) for _, g, role in p.employment] for p in w.people]
        owners = [[o for _, o in a.owners] for a in w.artefacts]
        mentors = [p.mentor for p in w.people]
        makers = [a.maker for a in w.artefacts]
        nicknames = [p.nickname for p in w.people]
        lived_in, worked_for, owned_by = self.lived_in, self.worked_for, self.owned_by
        all_ids, real_ids = self.all_ids, self.real_ids
        year_lo, year_span = self.year_lo, self.year_span
        t = _FILLER_M

        def other(pid: int) -> int:
            cast = self.cast
            for _ in range(4):
                q = cast[int(rnd() * len(cast))]
                if q != pid:
                    return q
            return (pid + 1) % n_people

        # Person draws: cast member, then full name (p=0.65) or formal name.
        def lives() -> str | None:
            cast = self.cast
            pid = cast[int(rnd() * len(cast))]
            base = person_fields[pid][rnd() >= 0.65]
            i = state_index(res_times[pid])
            if i < 0:
                return None
            f = base.copy()
            f["P"] = place_names[homes[pid][i]]
            ts = t["lives"]
            return ts[int(rnd() * len(ts))] % f

        def works() -> str | None:
            cast = self.cast
            pid = cast[int(rnd() * len(cast))]
            base = person_fields[pid][rnd() >= 0.65]
            i = state_index(job_times[pid])
            if i < 0:
                return None
            f = base.copy()
            f["G"], f["R"] = posts[pid][i]
            ts = t["works"]
            return ts[int(rnd() * len(ts))] % f

        def keeps() -> str | None:
            arts = self.arts
            aid = arts[int(rnd() * len(arts))]
            i = state_index(own_times[aid])
            if i < 0:
                return None
            ts = t["keeps"]
            template = ts[int(rnd() * len(ts))]
            y = owners[aid][i]
            return template % {
                "O": art_names[aid],
                "Y": person_names[y] if rnd() < 0.7 else person_formal[y],
            }

        def lived() -> str | None:
            cast = self.cast
            pid = cast[int(rnd() * len(cast))]
            base = person_fields[pid][rnd() >= 0.65]
            i = state_index(res_times[pid])
            if i < 1:
                return None
            f = base.copy()
            f["P"] = place_names[homes[pid][int(rnd() * i)]]
            ts = t["lived"]
            return ts[int(rnd() * len(ts))] % f

        def owned() -> str | None:
            arts = self.arts
            aid = arts[int(rnd() * len(arts))]
            i = state_index(own_times[aid])
            if i < 1:
                return None
            y = owners[aid][int(rnd() * i)]
            ts = t["owned"]
            template = ts[int(rnd() * len(ts))]
            return template % {
                "O": art_names[aid],
                "Y": person_names[y] if rnd() < 0.7 else person_formal[y],
            }

        def visit() -> str | None:
            cast = self.cast
            pid = cast[int(rnd() * len(cast))]
            f = person_fields[pid][rnd() >= 0.65].copy()
            places = self.places
            f["P"] = place_names[places[int(rnd() * len(places))]]
            ts = t["visit"]
            return ts[int(rnd() * len(ts))] % f

        def social() -> str | None:
            cast = self.cast
            pid = cast[int(rnd() * len(cast))]
            f = person_fields[pid][rnd() >= 0.65].copy()
            x = other(pid)
            f["X"] = person_names[x] if rnd() < 0.7 else person_formal[x]
            ts = t["social"]
            return ts[int(rnd() * len(ts))] % f

        def never_in_place(kind: str) -> Callable[[], str | None]:
            """A negation about a town the person never lived in (never lived / never born)."""
            ts = t[kind]

            def filler() -> str | None:
                cast = self.cast
                pid = cast[int(rnd() * len(cast))]
                base = person_fields[pid][rnd() >= 0.65]
                pl = int(rnd() * n_places)
                if pl in lived_in[pid]:
                    return None
                f = base.copy()
                f["P"] = place_names[pl]
                return ts[int(rnd() * len(ts))] % f

            return filler

        def never_with_object(
            kind: str, related: Callable[[int, int], bool]
        ) -> Callable[[], str | None]:
            """A negation about an object and a person it was never `related` to."""
            ts = t[kind]

            def filler() -> str | None:
                arts, cast = self.arts, self.cast
                aid = arts[int(rnd() * len(arts))]
                x = cast[int(rnd() * len(cast))]
                if related(aid, x):
                    return None
                template = ts[int(rnd() * len(ts))]
                return template % {
                    "O": art_names[aid],
                    "X": person_names[x] if rnd() < 0.7 else person_formal[x],
                }

            return filler

        not_lived = never_in_place("not_lived")
        not_born = never_in_place("not_born")
        not_owned = never_with_object("not_owned", lambda aid, x: x in owned_by[aid])
        not_made = never_with_object("not_made", lambda aid, x: x == makers[aid])

        def not_taught() -> str | None:
            cast = self.cast
            pid = cast[int(rnd() * len(cast))]
            base = person_fields[pid][rnd() >= 0.65]
            x = other(pid)
            if x == mentors[pid]:
                return None
            f = base.copy()
            f["X"] = person_names[x] if rnd() < 0.7 else person_formal[x]
            ts = t["not_taught"]
            return ts[int(rnd() * len(ts))] % f

        def not_worked() -> str | None:
            cast = self.cast
            pid = cast[int(rnd() * len(cast))]
            base = person_fields[pid][rnd() >= 0.65]
            g = int(rnd() * n_orgs)
            if g in worked_for[pid]:
                return None
            f = base.copy()
            f["G"] = org_names[g]
            ts = t["not_worked"]
            return _cap(ts[int(rnd() * len(ts))] % f)

        def place() -> str | None:
            ts = t["place"]
            template = ts[int(rnd() * len(ts))]
            places = self.places
            return template % {"P": place_names[places[int(rnd() * len(places))]]}

        def org() -> str | None:
            ts = t["org"]
            template = ts[int(rnd() * len(ts))]
            orgs = self.orgs
            return _cap(template % {"G": org_names[orgs[int(rnd() * len(orgs))]]})

        def object_() -> str | None:
            ts = t["object"]
            template = ts[int(rnd() * len(ts))]
            arts = self.arts
            return _cap(template % {"O": art_names[arts[int(rnd() * len(arts))]]})

        def year() -> str | None:
            cast = self.cast
            pid = cast[int(rnd() * len(cast))]
            f = person_fields[pid][rnd() >= 0.65].copy()
            places = self.places
            f["P"] = place_names[places[int(rnd() * len(places))]]
            f["Y4"] = str(year_lo + int(rnd() * year_span))
            ts = t["year"]
            return ts[int(rnd() * len(ts))] % f

        def count() -> str | None:
            cast = self.cast
            pid = cast[int(rnd() * len(cast))]
            f = person_fields[pid][rnd() >= 0.65].copy()
            places = self.places
            f["P"] = place_names[places[int(rnd() * len(places))]]
            f["C"] = NUMBER_WORDS[2 + int(rnd() * 11)]
            ts = t["count"]
            return _cap(ts[int(rnd() * len(ts))] % f)

        def code() -> str | None:
            # Look-alike of a real ID (one digit changed) or a fresh one; never a real ID.
            base = all_ids[int(rnd() * len(all_ids))]
            pos = 3 + int(rnd() * 4)
            token = base[:pos] + str(int(rnd() * 10)) + base[pos + 1 :]
            if token in real_ids:
                return None
            ts = t["code"]
            template = ts[int(rnd() * len(ts))]
            places = self.places
            return template % {"ID": token, "P": place_names[places[int(rnd() * len(places))]]}

        def alias() -> str | None:
            cast = self.cast
            pid = cast[int(rnd() * len(cast))]
            nickname = nicknames[pid]
            if not nickname:
                return None
            ts = t["alias"]
            template = ts[int(rnd() * len(ts))]
            places = self.places
            place = place_names[places[int(rnd() * len(places))]]
            return _cap(template % {"N": person_names[pid], "K": nickname, "P": place})

        def activity() -> str | None:
            cast = self.cast
            pid = cast[int(rnd() * len(cast))]
            base = person_fields[pid][rnd() >= 0.65]
            return _ACTIVITIES_M[int(rnd() * len(_ACTIVITIES_M))] % base

        return {
            "lives": lives,
            "works": works,
            "keeps": keeps,
            "lived": lived,
            "owned": owned,
            "visit": visit,
            "social": social,
            "not_lived": not_lived,
            "not_owned": not_owned,
            "not_made": not_made,
            "not_taught": not_taught,
            "not_worked": not_worked,
            "not_born": not_born,
            "place": place,
            "org": org,
            "object": object_,
            "year": year,
            "count": count,
            "code": code,
            "alias": alias,
            "activity": activity,
        }

    def filler(self) -> str:
        cum, fns, rnd = self.filler_cum, self.filler_fns, self.rnd
        total = cum[-1]
        while True:
            s = fns[bisect.bisect_right(cum, rnd() * total)]()
            if s is not None:
                return s if s[0] != "t" else "T" + s[1:]  # "the X Guild ..." opens a sentence

    # ---------------------------------------------------------------------------- chapters
    def render(self, chapter_chars: Callable[[int, int], int]) -> RenderResult:
        """Render all chapters; ``chapter_chars(c, used_so_far)`` gives chapter c's budget."""
        w = self.w
        by_chapter: list[list[Event]] = [[] for _ in range(w.n_chapters)]
        for ev in w.events:
            by_chapter[min(ev.chapter, w.n_chapters - 1)].append(ev)
        parts: list[str] = []
        pos = 0
        chapters: list[Chapter] = []
        spans: dict[tuple[str, int, int], tuple[int, int]] = {}
        forms: dict[tuple[str, int, int], str] = {}
        rnd = self.rnd
        # The body of `filler`, inlined: this loop runs ~12K times for 200K tokens.
        filler_cum, filler_fns = self.filler_cum, self.filler_fns
        filler_total = filler_cum[-1]
        bisect_right = bisect.bisect_right
        for c in range(w.n_chapters):
            evs = by_chapter[c]
            ev_people = [e.subject for e in evs if e.kind in ("residence", "employment")]
            ev_arts = [e.subject for e in evs if e.kind == "owner"]
            self._set_chapter(c, ev_people, ev_arts)
            budget = chapter_chars(c, pos)
            title = self.pick(TITLE_PATTERNS).format(
                P=self.place_names[self.pick(self.places)], Season=self.pick(SEASONS)
            )
            date = w.date_text(c)
            header = f"Chapter {c + 1}: {title}\n{date}\n\n"
            start = pos
            parts.append(header)
            pos += len(header)
            needles = [self.needle(e) for e in evs]
            used = sum(len(t) + 1 for t, _ in needles) + len(header)
            fillers: list[str] = []
            while used < budget:
                s = filler_fns[bisect_right(filler_cum, rnd() * filler_total)]()
                while s is None:
                    s = filler_fns[bisect_right(filler_cum, rnd() * filler_total)]()
                if s[0] == "t":
                    s = "T" + s[1:]  # "the X Guild ..." opens a sentence
                fillers.append(s)
                used += len(s) + 1
            # Needles keep their story order; their slots among the filler are random.
            total = len(needles) + len(fillers)
            slots = sorted(self.rng.sample(range(total), len(needles)))
            units = fillers
            for slot, (text, _) in zip(slots, needles, strict=True):
                units.insert(slot, text)
            # Paragraphs of 4-7 sentences; "starts" holds the first unit of each paragraph.
            starts = [0]
            while starts[-1] < total:
                starts.append(starts[-1] + 4 + int(rnd() * 4))
            starts[-1] = total
            paragraphs = [" ".join(units[a:b]) for a, b in itertools.pairwise(starts)]
            body = "\n\n".join(paragraphs) + "\n\n"
            # Offset of unit i = lengths of the units before it + one space per earlier unit
            # + one more character per paragraph break before it ("\n\n" vs " ").
            cum = [0, *itertools.accumulate(map(len, units))]
            for slot, ev, (text, form) in zip(slots, evs, needles, strict=True):
                breaks = bisect_right(starts, slot) - 1
                at = pos + cum[slot] + slot + breaks
                key = ev.key
                spans[key] = (at, at + len(text))
                forms[key] = form
            parts.append(body)
            pos += len(body)
            chapters.append(Chapter(c, c + 1, title, date, start, pos))
        return RenderResult("".join(parts), chapters, spans, forms)


# Roles are part of the vocabulary questions may ask about; exported for the task builder.
__all__ = ["NEEDLES", "ROLES", "Chapter", "RenderResult", "Renderer", "article"]
