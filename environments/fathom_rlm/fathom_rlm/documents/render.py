"""Turn a :class:`World` into narrative text and remember what every sentence asserts.

Each event of the world becomes one *needle* rendered by the relation grammar (``grammar.py``)
with the shapes of the document's split. A person subject is named by full name, formal name,
a pronoun after an antecedent sentence, or an alias introduced once, earlier in the text; the
needle's :class:`Fact` then has several supporting spans. Needles are interleaved, in story
order, with filler (``filler.py``), alias introductions, and hard negatives in the needles' own
shapes (negated, planned, rumoured, corrected, hypothetical, quoted, near-namesake) whose values
are false for their subject in the world.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass

from .alternatives import draw_alternatives
from .distractors import DistractorMaker
from .facts import Distractor, Fact
from .filler import filler_functions
from .filler_tables import FILLER_WEIGHTS, SEASONS, TITLE_PATTERNS
from .grammar import ALIAS_INTROS, RELATION_SLOTS, RETRACTED, TIMED, deal, to_mapping
from .narrator import Narrator, Ref, Unit, article, cap
from .world import Event, World


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
    facts: dict[tuple[str, int, int], Fact]
    forms: dict[tuple[str, int, int], str]
    shapes: dict[tuple[str, int, int], str]
    distractors: list[Distractor]


# Average unit lengths in characters (measured on generated documents): they size a document's
# retracted statements and reserve each chapter's room before any of it is written.
_NEEDLE_CHARS, _CONTESTED_CHARS, _INTRO_CHARS, _RETRACTED_CHARS = 80, 175, 65, 175
MAX_RETRACTED_PER_FACT = 5
MANDATORY_SHARE = 0.9  # needles, alias introductions and retracted statements: the rest filler


def retractions_per_fact(world: World, doc_chars: int) -> int:
    """Retracted statements per contested fact: five, or fewer (at least one) when needles and
    retractions would fill more than ``MANDATORY_SHARE`` of a short document."""
    contested = len(world.contested.keys)
    room = MANDATORY_SHARE * doc_chars - _needle_chars(world, world.events, 0)
    room -= sum(1 for p in world.people if p.alias) * _INTRO_CHARS
    fits = int(room // max(1, contested * _RETRACTED_CHARS))
    return max(1, min(MAX_RETRACTED_PER_FACT, fits))


def _needle_chars(world: World, events: list[Event], per_fact: int) -> int:
    """Estimated length of the needles of ``events`` with ``per_fact`` retractions for each
    contested fact."""
    contested = sum(1 for e in events if e.key in world.contested.keys)
    plain = (len(events) - contested) * _NEEDLE_CHARS
    return plain + contested * (_CONTESTED_CHARS + per_fact * _RETRACTED_CHARS)


class Renderer(Narrator):
    """Lays one world out as chapters: needles in story order among filler, alias
    introductions and hard negatives, each sentence's assertions recorded by its spans."""

    def __init__(self, world: World, rng: random.Random, split: str = "train") -> None:
        super().__init__(world, rng, split)
        self.titles = deal(TITLE_PATTERNS, split)
        self.intros = tuple((to_mapping(t), ALIAS_INTROS.index(t)) for t in self.grammar.intros)
        kinds = list(FILLER_WEIGHTS)
        self.filler_cum = list(itertools.accumulate(FILLER_WEIGHTS[k] for k in kinds))
        fns = filler_functions(self, split)
        self.filler_fns: list[Callable[[], str | None]] = [fns[k] for k in kinds]
        self.distractors = DistractorMaker(self)
        self.contested = world.contested.keys

    # ------------------------------------------------------------------------------ needles
    def needle(self, ev: Event) -> Unit:
        """Render one event as a fact unit."""
        relation, slot, fields, value, detail, refs = self.event_fields(ev)
        initial = ev.index == 0 and relation in TIMED
        vp = self.pick(self.grammar.phrases(relation, initial))
        sid = ev.subject
        if slot == "S":
            ref = self.person_ref(sid, vp.subject_first)
        else:
            ref = self.thing_ref(slot, sid, vp.subject_first)
        fields[slot] = ref.text
        frame, f = self.frame()
        sentence, adv = self.compose(vp, "PAST", fields, frame)
        unit = Unit("", "fact", relation, "", value, detail, key=ev.key)
        unit.change = relation in TIMED and not initial
        unit.shape = f"{relation}/{vp.tag}/frame{f}/{adv}"
        self.with_subject(unit, slot, sid, ref, sentence)
        for other in refs:
            unit.remote.extend(other.remote)
        if ev.key in self.contested:
            # Its retracted false statements are each followed by a verdict of their own, and so
            # is the true one: a verdict that lets it stand (verdicts.py).
            unit.text += " " + self.verdict(stands=True)
        return unit

    def event_fields(self, ev: Event):
        """(relation, subject slot, slot fields, value, detail, person refs of other slots)."""
        w, kind, sid, k = self.w, ev.kind, ev.subject, ev.index
        subject_slot, _, _ = RELATION_SLOTS[kind]
        refs: list[Ref] = []
        if kind in ("owner", "maker", "mark"):
            a = w.artefacts[sid]
            fields = {"O": self.art_names[sid]}
            if kind == "mark":
                return kind, subject_slot, {**fields, "ID": a.mark}, a.mark, None, refs
            ref = self.other_ref(a.owners[k][1] if kind == "owner" else a.maker)
            refs.append(ref)
            fields["Y" if kind == "owner" else "M"] = ref.text
            return kind, subject_slot, fields, ref.resolved, None, refs
        if kind in ("founding", "seat"):
            g = w.organisations[sid]
            fields = {"G": self.org_names[sid]}
            if kind == "seat":
                place = self.place_names[g.seat]
                return kind, subject_slot, {**fields, "P": place}, place, None, refs
            ref = self.other_ref(g.founder)
            refs.append(ref)
            fields.update(F=ref.text, Y4=str(g.founded_year))
            return kind, subject_slot, fields, ref.resolved, str(g.founded_year), refs
        p = w.people[sid]
        fields = {"S": ""}
        if kind == "residence":
            place = self.place_names[p.residence[k][1]]
            return kind, "S", {**fields, "P": place}, place, None, refs
        if kind == "employment":
            _, org, role = p.employment[k]
            fields.update(G=self.org_names[org], R=article(role))
            return kind, "S", fields, self.org_names[org], role, refs
        if kind == "birth":
            place = self.place_names[p.birthplace]
            fields.update(P=place, Y4=str(p.birth_year))
            return kind, "S", fields, place, str(p.birth_year), refs
        if kind == "mentor":
            ref = self.other_ref(p.mentor)
            refs.append(ref)
            fields["M"] = ref.text
            return kind, "S", fields, ref.resolved, None, refs
        return kind, "S", {**fields, "ID": p.permit}, p.permit, None, refs  # permit

    def intro(self, pid: int) -> Unit:
        """The one sentence introducing a person's alias."""
        template, i = self.pick(self.intros)
        text = cap(template % {"N": self.person_names[pid], "K": self.aliases[pid]}) + "."
        return Unit(text, "intro", local=[(0, len(text))], shape=f"intro/{i}", person=pid)

    def render(self, doc_chars: int, wiggle: list[float]) -> RenderResult:
        """Render all chapters into about ``doc_chars`` characters. Each chapter gets room for
        its own needles, introductions and retractions plus a share of the filler left,
        scaled by ``wiggle[c]`` (the last chapter takes what remains)."""
        w = self.w
        n = w.n_chapters
        by_chapter: list[list[Event]] = [[] for _ in range(n)]
        for ev in w.events:
            by_chapter[min(ev.chapter, n - 1)].append(ev)
        intros_at: list[list[int]] = [[] for _ in range(n)]
        for pid, alias in enumerate(self.aliases):
            if alias:
                intros_at[self.alias_chapter[pid]].append(pid)
        self.per_fact = retractions_per_fact(w, doc_chars)
        self.alternatives, self.stated = draw_alternatives(w, self.rnd, self.per_fact)
        reserved = [
            _needle_chars(w, evs, self.per_fact) + len(intros) * _INTRO_CHARS
            for evs, intros in zip(by_chapter, intros_at, strict=True)
        ]
        out = RenderResult("", [], {}, {}, {}, [])
        parts: list[str] = []
        pos = 0
        for c in range(n):
            evs = by_chapter[c]
            self.set_chapter(
                c,
                [e.subject for e in evs if e.kind in ("residence", "employment")],
                [e.subject for e in evs if e.kind == "owner"],
            )
            free = max(0, doc_chars - pos - sum(reserved[c:]))
            budget = reserved[c] + int(free / (n - c) * (wiggle[c] if c < n - 1 else 1.0))
            text, chapter = self.chapter(c, evs, intros_at[c], pos, budget, out)
            parts.append(text)
            pos += len(text)
            out.chapters.append(chapter)
        out.text = "".join(parts)
        return out

    def chapter(
        self, c: int, evs: list[Event], intro_people: list[int], pos: int, budget: int, out
    ) -> tuple[str, Chapter]:
        """One chapter's text starting at ``pos``; records its units' annotations in ``out``."""
        title = self.pick(self.titles).format(
            P=self.place_names[self.pick(self.places)], Season=self.pick(SEASONS)
        )
        date = self.w.date_text(c)
        header = f"Chapter {c + 1}: {title}\n{date}\n\n"
        # Changes keep their story order. A one-off fact is timeless, and its true statement
        # goes anywhere in the chapter like its retracted ones: kept in order among the
        # changes, it would sit apart from its retracted ones.
        needles = [self.needle(e) for e in evs if e.kind not in RETRACTED]
        others = [self.needle(e) for e in evs if e.kind in RETRACTED]
        others += [self.intro(pid) for pid in intro_people]
        used = len(header) + sum(len(u.text) + 1 for u in (*needles, *others))
        # The same number of retracted false statements for every one-off needle (so how many
        # a fact has says nothing of which is true), then the cue-word hard negatives, all
        # shuffled in with the needles: some land before the true statement, some after it.
        # Retracted ones always go in (the document's size set their number); the others stop
        # where the chapter would hold less than a tenth filler, so its length stays on budget.
        room = int(budget * 0.9) - used
        for e in evs:
            if e.key in self.contested:
                for k in range(self.per_fact):
                    others.append(self.distractors.retracted(e.kind, e.subject, k))
                    used += len(others[-1].text) + 1
                    room -= len(others[-1].text) + 1
        for u in self.distractors.chapter_distractors(len(evs)):
            if u is not None and len(u.text) < room:
                others.append(u)
                room -= len(u.text) + 1
                used += len(u.text) + 1
        fillers = self.fill(budget - used)
        # The changes keep their story order; the other units go anywhere; all land among filler.
        specials: list[Unit] = list(needles)
        for u in others:
            specials.insert(int(self.rnd() * (len(specials) + 1)), u)
        total = len(specials) + len(fillers)
        slots = sorted(self.rng.sample(range(total), len(specials)))
        units: list[str] = fillers
        for slot, u in zip(slots, specials, strict=True):
            units.insert(slot, u.text)
        # Paragraphs of 4-7 sentences; "starts" holds the first unit of each paragraph.
        starts = [0]
        while starts[-1] < total:
            starts.append(starts[-1] + 4 + int(self.rnd() * 4))
        starts[-1] = total
        body = "\n\n".join(" ".join(units[a:b]) for a, b in itertools.pairwise(starts)) + "\n\n"
        # Offset of unit i = lengths of the units before it + one space per earlier unit
        # + one more character per paragraph break before it ("\n\n" vs " ").
        cum = [0, *itertools.accumulate(map(len, units))]
        base = pos + len(header)
        for slot, u in zip(slots, specials, strict=True):
            at = base + cum[slot] + slot + bisect.bisect_right(starts, slot) - 1
            self.record(u, at, c + 1, date, out)
        return header + body, Chapter(c, c + 1, title, date, pos, pos + len(header) + len(body))

    def fill(self, chars: int) -> list[str]:
        """Filler sentences until ``chars`` characters (with their spaces) are used."""
        rnd, cum, fns = self.rnd, self.filler_cum, self.filler_fns
        total, bisect_right = cum[-1], bisect.bisect_right
        out: list[str] = []
        used = 0
        while used < chars:
            s = fns[bisect_right(cum, rnd() * total)]()
            while s is None:
                s = fns[bisect_right(cum, rnd() * total)]()
            if s[0] == "t":
                s = "T" + s[1:]  # "the X Guild ..." opens a sentence
            out.append(s)
            used += len(s) + 1
        return out

    def record(self, u: Unit, at: int, number: int, date: str, out: RenderResult) -> None:
        if u.remote or len(u.local) > 1:
            spans = tuple(sorted([*u.remote, *((at + s, at + e) for s, e in u.local)]))
        else:
            spans = ((at + u.local[0][0], at + u.local[0][1]),)
        if u.kind == "intro":
            self.alias_span[u.person] = spans[0]
            return
        kind = u.kind
        if kind == "fact" or kind == "namesake":
            fact = Fact(u.relation, u.subject, u.value, u.detail, number, date, spans, u.change)
            if kind == "fact":
                out.facts[u.key] = fact
                out.forms[u.key] = u.form
                out.shapes[u.key] = u.shape
                return
        if kind == "retracted":
            # What a reader takes from the statement alone (without its retraction).
            statement = tuple(sp for sp in spans if sp != spans[-1])
            fact = Fact(u.relation, u.subject, u.value, u.detail, number, date, statement)
        read = fact if kind in ("namesake", "retracted") else None
        out.distractors.append(
            Distractor(u.kind, u.relation, u.subject, u.value, u.shape, spans, read, u.form, u.key)
        )
