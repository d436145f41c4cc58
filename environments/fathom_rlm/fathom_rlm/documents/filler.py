"""Filler sentences: the same people, places and objects as the needles, in other shapes.

Filler states the current state of a relation (only when it does not change inside the chapter,
so it never contradicts a needle), superseded past states, visits that are not moves, letters and
quarrels, weather, look-alike ID tokens, years and counts, and uses of aliases introduced earlier.
Each kind's templates are dealt to the splits like the relation grammar (index mod 3), so a
split's filler shares no template with another split's.

This is the innermost loop of generation (~12K sentences for 200K tokens): the kinds are closures
over the document's tables, formatting ``%``-templates with one float draw per choice.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .grammar import SPLITS, deal, split_grammar, to_mapping

if TYPE_CHECKING:
    from .render import Renderer

# Sentences that name a person and nothing else: antecedents of pronoun subjects, and filler.
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
        "{S} wrote from {P} that the roof leaked again.",
        "The baker in {P} knew {N} by sight.",
        "{S} swept the step of the house in {P} every morning.",
        "Visitors to {P} could find {N} at home most evenings.",
    ),
    "works": (
        "{S} was still {R} with {G}.",
        "{S} kept long hours at {G}.",
        "{G} paid {N} late again.",
        "{S} complained about the ledgers at {G}.",
        "As {R}, {N} rarely had a free evening.",
        "{S} asked {G} for leave and was refused.",
        "{G} sent {N} out on an errand in the rain.",
        "{S} grumbled about the pay at {G}.",
        "Every morning {N} walked to the door of {G}.",
    ),
    "keeps": (
        "{Y} kept {O} wrapped in oilcloth.",
        "{O} sat on a shelf in the house of {Y}.",
        "{Y} showed {O} to visitors only on feast days.",
        "{Y} would not lend {O} to anyone.",
        "{O} was cleaned and polished by {Y} every week.",
        "{Y} hid {O} under a loose floorboard.",
        "{O} hung above the hearth of {Y}.",
        "{Y} dusted {O} before every visitor came.",
        "{Y} refused three offers for {O} that winter.",
    ),
    # Superseded facts: true of the past, not of now.
    "lived": (
        "Years earlier {N} had lived in {P}.",
        "{S} still had friends in {P}, where {s} used to live.",
        "{S} sometimes missed the old house in {P}.",
        "Before all this, {N} had been a resident of {P}.",
        "{S} kept a key to the old rooms in {P}.",
        "Letters for {N} still went to {P} by mistake.",
        "{S} had not been back to {P} since leaving it.",
        "An old landlord in {P} still asked after {N}.",
        "{S} remembered the damp walls of the old place in {P}.",
    ),
    "owned": (
        "{O} had once belonged to {Y}.",
        "{Y} no longer had {O} and rarely spoke of it.",
        "Some remembered {O} from the days when {Y} owned it.",
        "{Y} had parted with {O} long ago.",
        "{O} still bore a scratch from its years with {Y}.",
        "{Y} used to keep {O} by the window.",
        "{O} was no longer among the things of {Y}.",
        "{Y} had given up {O} years before.",
        "There was a time when {O} stood in the hall of {Y}.",
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
        "{S} paid a debt to a carter from {P}.",
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
        "{S} played draughts with {X} until midnight.",
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
        "The well at {P} ran dry in the heat.",
    ),
    "org": (
        "{G} raised its fees again.",
        "A notice from {G} was nailed to the door of every inn.",
        "{G} lost a barge of timber to the spring flood.",
        "The accounts of {G} were audited and found wanting.",
        "{G} held its yearly feast, and nobody enjoyed it.",
        "Rumours of debt followed {G} all season.",
        "{G} printed a new price list.",
        "The clerks of {G} struck for a day.",
        "{G} bought a second barge.",
    ),
    "object": (
        "{O} was much talked about that winter.",
        "A pedlar claimed to have seen a copy of {O}.",
        "Nobody could agree on what {O} was worth.",
        "{O} needed repair after a hard frost.",
        "Children told stories about {O}.",
        "A painter asked to sketch {O}.",
        "{O} gathered dust for a season.",
        "A collector wrote a long letter about {O}.",
        "{O} was said to bring bad luck.",
    ),
    "year": (
        "The bridge at {P} had stood since {Y4}.",
        "{S} often spoke of the hard winter of {Y4}.",
        "The floods of {Y4} were still remembered in {P}.",
        "A stone by the road to {P} was carved with the year {Y4}.",
        "{S} kept a coin minted in {Y4}.",
        "The church at {P} kept a bell cast in {Y4}.",
        "{S} still told the story of the fire of {Y4}.",
        "The old map of {P} was dated {Y4}.",
        "{S} had a pocket watch engraved {Y4}.",
    ),
    "count": (
        "{S} bought {C} barrels of pitch.",
        "{S} counted {C} boats at the landing.",
        "{C} wagons left {P} before dawn.",
        "{S} owed money to {C} different people.",
        "The inn at {P} had {C} rooms, all taken.",
        "{S} planted {C} rows of beans.",
        "{S} mended {C} nets before supper.",
        "The fair at {P} drew {C} travelling players.",
        "{S} kept {C} hens behind the house.",
    ),
    "code": (
        "A crate stamped {ID} sat unclaimed on the quay at {P}.",
        "The ledger at {P} listed a permit {ID} that nobody could account for.",
        "A forged permit marked {ID} turned up in {P}.",
        "Customs at {P} held a bale tagged {ID} for a week.",
        "An old registry slip numbered {ID} was found behind a drawer.",
        "A barrel chalked {ID} rolled off a cart in {P}.",
        "A torn label reading {ID} blew along the street in {P}.",
        "The carter at {P} could not explain a chit marked {ID}.",
        "A sack branded {ID} was sold at auction in {P}.",
    ),
    # Uses of an alias already introduced (never an introduction: each alias has one).
    "alias": (
        "{K} was seen near {P} again.",
        "Nobody crossed {K} twice.",
        "{K} said nothing, as usual.",
        "{K} came down to the quay at first light.",
        "{K} had opinions about everything.",
        "{K} was in a foul temper all week.",
        "{K} laughed at the news from {P}.",
        "{K} kept a dog that bit strangers.",
        "{K} won a bet about the weather.",
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
    "Quiet Weeks",
    "News from {P}",
)


def filler_shapes(split: str) -> list[str]:
    """Shape ids of the split's filler templates and chapter titles."""
    out = []
    for kind, templates in (*FILLER.items(), ("title", TITLE_PATTERNS)):
        out.extend(f"filler/{kind}/{templates.index(t)}" for t in deal(templates, split))
    return out


def split_tables(split: str) -> dict[str, tuple[str, ...]]:
    """The split's filler templates in ``%`` form, keyed by kind."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}")
    return {kind: tuple(to_mapping(t) for t in deal(ts, split)) for kind, ts in FILLER.items()}


def article(role: str) -> str:
    return ("an " if role[0] in "aeiou" else "a ") + role


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def filler_functions(r: Renderer, split: str) -> dict[str, Callable[[], str | None]]:
    """One closure per filler kind, keyed like ``FILLER_WEIGHTS``.

    Each returns a sentence, or None when its precondition fails (the caller then draws another
    kind). The chapter's cast, objects, places and organisations are read from ``r`` at call
    time (set by ``Renderer.set_chapter``).
    """
    rnd = r.rnd
    person_fields = r.person_fields

    def person() -> tuple[int, dict[str, str]]:
        """A cast member and their subject fields (full name p=0.65, else formal name)."""
        cast = r.cast
        pid = cast[int(rnd() * len(cast))]
        return pid, person_fields[pid][rnd() >= 0.65]

    g = split_grammar(split)
    frames = g.frames[1:]
    fronts = [_cap(a) + ", " for a in (*g.adverbials, *g.asides)]
    ends = [" " + a for a in g.adverbials] + [", " + a for a in g.asides]

    def say(templates: tuple[str, ...], fields: dict[str, str]) -> str:
        """One template of a kind, drawn and filled. A sentence that opens with a name takes a
        framing or an adverbial two times in five, as relation sentences do, so neither marks
        a needle."""
        template = templates[int(rnd() * len(templates))]
        s = template % fields
        if template[0] != "%":
            return s
        x = rnd()
        if x < 0.6:
            return s
        if x < 0.75:
            return frames[int(rnd() * len(frames))] + s
        if x < 0.87:
            return fronts[int(rnd() * len(fronts))] + s
        return s[:-1] + ends[int(rnd() * len(ends))] + "."

    t = split_tables(split)
    fns = _state_fillers(r, t, person, say)
    fns.update(_people_fillers(r, t, person, say))
    fns.update(_world_fillers(r, t, person, say))
    return {kind: fns[kind] for kind in FILLER_WEIGHTS}


def _state_fillers(r: Renderer, t, person, say) -> dict[str, Callable[[], str | None]]:
    """Current and superseded states of residence, employment and ownership."""
    rnd, w = r.rnd, r.w
    place_names, org_names, art_names = r.place_names, r.org_names, r.art_names
    person_names, person_formal = r.person_names, r.person_formal
    homes = [[pl for _, pl in p.residence] for p in w.people]
    posts = [[(org_names[g], article(role)) for _, g, role in p.employment] for p in w.people]
    owners = [[o for _, o in a.owners] for a in w.artefacts]
    res_times, job_times, own_times = r.res_times, r.job_times, r.own_times

    def lives() -> str | None:
        pid, base = person()
        i = r.state_index(res_times[pid])
        if i < 0:
            return None
        return say(t["lives"], {**base, "P": place_names[homes[pid][i]]})

    def works() -> str | None:
        pid, base = person()
        i = r.state_index(job_times[pid])
        if i < 0:
            return None
        g, role = posts[pid][i]
        return _cap(say(t["works"], {**base, "G": g, "R": role}))

    def object_state(kind: str, past: bool) -> Callable[[], str | None]:
        templates = t[kind]

        def filler() -> str | None:
            arts = r.arts
            aid = arts[int(rnd() * len(arts))]
            i = r.state_index(own_times[aid])
            if i < (1 if past else 0):
                return None
            y = owners[aid][int(rnd() * i)] if past else owners[aid][i]
            name = person_names[y] if rnd() < 0.7 else person_formal[y]
            return say(templates, {"O": art_names[aid], "Y": name})

        return filler

    def lived() -> str | None:
        pid, base = person()
        i = r.state_index(res_times[pid])
        if i < 1:
            return None
        return say(t["lived"], {**base, "P": place_names[homes[pid][int(rnd() * i)]]})

    return {
        "lives": lives,
        "works": works,
        "keeps": object_state("keeps", past=False),
        "lived": lived,
        "owned": object_state("owned", past=True),
    }


def _people_fillers(r: Renderer, t, person, say) -> dict[str, Callable[[], str | None]]:
    """People doing things that are not relations: visits, company, habits, aliases."""
    rnd = r.rnd
    place_names, person_names, person_formal = r.place_names, r.person_names, r.person_formal
    n_people = len(person_names)
    aliases = r.aliases

    def other(pid: int) -> int:
        cast = r.cast
        for _ in range(4):
            q = cast[int(rnd() * len(cast))]
            if q != pid:
                return q
        return (pid + 1) % n_people

    def visit() -> str | None:
        _, base = person()
        places = r.places
        return say(t["visit"], {**base, "P": place_names[places[int(rnd() * len(places))]]})

    def social() -> str | None:
        pid, base = person()
        x = other(pid)
        return say(t["social"], {**base, "X": person_names[x] if rnd() < 0.7 else person_formal[x]})

    def alias() -> str | None:
        cast = r.cast
        pid = cast[int(rnd() * len(cast))]
        if not r.alias_ready(pid):
            return None
        places = r.places
        place = place_names[places[int(rnd() * len(places))]]
        return _cap(say(t["alias"], {"K": aliases[pid], "P": place}))

    def activity() -> str | None:
        return say(t["activity"], person()[1])

    return {"visit": visit, "social": social, "alias": alias, "activity": activity}


def _world_fillers(r: Renderer, t, person, say) -> dict[str, Callable[[], str | None]]:
    """Atmosphere around places, organisations and objects; years, counts, look-alike IDs."""
    rnd = r.rnd
    place_names, org_names, art_names = r.place_names, r.org_names, r.art_names
    all_ids, real_ids = r.all_ids, r.real_ids
    year_lo, year_span = r.year_lo, r.year_span

    def a_place() -> str:
        places = r.places
        return place_names[places[int(rnd() * len(places))]]

    def place() -> str | None:
        return say(t["place"], {"P": a_place()})

    def org() -> str | None:
        orgs = r.orgs
        return _cap(say(t["org"], {"G": org_names[orgs[int(rnd() * len(orgs))]]}))

    def object_() -> str | None:
        arts = r.arts
        return _cap(say(t["object"], {"O": art_names[arts[int(rnd() * len(arts))]]}))

    def year() -> str | None:
        _, base = person()
        fields = {**base, "P": a_place(), "Y4": str(year_lo + int(rnd() * year_span))}
        return say(t["year"], fields)

    def count() -> str | None:
        _, base = person()
        fields = {**base, "P": a_place(), "C": NUMBER_WORDS[2 + int(rnd() * 11)]}
        return _cap(say(t["count"], fields))

    def code() -> str | None:
        # Look-alike of a real ID (one digit changed) or a fresh one; never a real ID.
        token = look_alike(rnd, all_ids)
        if token in real_ids:
            return None
        return say(t["code"], {"ID": token, "P": a_place()})

    return {
        "place": place,
        "org": org,
        "object": object_,
        "year": year,
        "count": count,
        "code": code,
    }


def look_alike(rnd: Callable[[], float], ids: list[str]) -> str:
    """One of ``ids`` with one digit redrawn (may equal a real ID; callers check)."""
    base = ids[int(rnd() * len(ids))]
    pos = 3 + int(rnd() * 4)
    return base[:pos] + str(int(rnd() * 10)) + base[pos + 1 :]
