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

from .filler_tables import FILLER_WEIGHTS, NUMBER_WORDS
from .grammar import split_grammar, split_tables
from .narrator import Narrator, article, cap, look_alike


def filler_functions(r: Narrator, split: str) -> dict[str, Callable[[], str | None]]:
    """One closure per filler kind, keyed like ``FILLER_WEIGHTS``.

    Each returns a sentence, or None when its precondition fails (the caller then draws another
    kind). The chapter's cast, objects, places and organisations are read from ``r`` at call
    time (set by ``Narrator.set_chapter``).
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
    fronts = [cap(a) + ", " for a in (*g.adverbials, *g.asides)]
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


def _state_fillers(r: Narrator, t, person, say) -> dict[str, Callable[[], str | None]]:
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
        return cap(say(t["works"], {**base, "G": g, "R": role}))

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


def _people_fillers(r: Narrator, t, person, say) -> dict[str, Callable[[], str | None]]:
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
        return cap(say(t["alias"], {"K": aliases[pid], "P": place}))

    def activity() -> str | None:
        return say(t["activity"], person()[1])

    return {"visit": visit, "social": social, "alias": alias, "activity": activity}


def _world_fillers(r: Narrator, t, person, say) -> dict[str, Callable[[], str | None]]:
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
        return cap(say(t["org"], {"G": org_names[orgs[int(rnd() * len(orgs))]]}))

    def object_() -> str | None:
        arts = r.arts
        return cap(say(t["object"], {"O": art_names[arts[int(rnd() * len(arts))]]}))

    def year() -> str | None:
        _, base = person()
        fields = {**base, "P": a_place(), "Y4": str(year_lo + int(rnd() * year_span))}
        return say(t["year"], fields)

    def count() -> str | None:
        _, base = person()
        fields = {**base, "P": a_place(), "C": NUMBER_WORDS[2 + int(rnd() * 11)]}
        return cap(say(t["count"], fields))

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
