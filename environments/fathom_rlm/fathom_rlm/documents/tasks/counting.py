"""Families that combine facts: a count over a long chapter range, a comparison of two values.

Aggregation counts arrivals in a town across a run of chapters. Three choices keep the count
from being guessed off the question:

* the target count is chosen first from 1..``count_max(document)`` (14 on long documents),
  dealt evenly over a split's documents (``make.balanced_count``), and a (chapter run, town)
  pair with exactly that count is then searched among all runs of a randomly drawn length, so
  the run's length and position say little about the count;
* the run holds 128K..152K characters on a 200K-token document: more than eight 12K-character
  slices, fewer than the sixteen a rollout may spend (docs/questions.md, "Depth"); the range is
  narrow because large counts live mostly in long runs, so a wide range lets the chapter span
  hint at the count;
* only arrivals are counted: hires by an organisation top out around five to eight per run, too
  narrow a range for an unpredictable count.
"""

from __future__ import annotations

import random
from dataclasses import replace

from ..filler_tables import NUMBER_WORDS
from .builder import TaskBuilder, person_forms, pick
from .core import Task

COUNT_MAX = 14  # largest count on long documents (larger ones are missing from many documents)
REGION_CHARS = (128_000, 152_000)  # counted run on a long document: 10.7 to 12.7 slices of 12K
REGION_SHARE = (0.45, 0.8)  # ... and as a share of the text on documents too short for that
SHORT_COUNT_MAX = 10  # on documents under LONG_DOCUMENT_CHARS
LONG_DOCUMENT_CHARS = 200_000  # from about 50K tokens on, counts reach COUNT_MAX


def count_max(text_chars: int) -> int:
    """Largest count asked on a document of ``text_chars`` characters. Short documents have
    fewer chapters per run, and counts above ten are often absent from all their runs."""
    return COUNT_MAX if text_chars >= LONG_DOCUMENT_CHARS else SHORT_COUNT_MAX


def region_bounds(text_chars: int) -> tuple[int, int]:
    """Smallest and largest counted run, in characters."""
    lo = min(REGION_CHARS[0], int(REGION_SHARE[0] * text_chars))
    hi = min(REGION_CHARS[1], int(REGION_SHARE[1] * text_chars))
    return lo, hi


class ArrivalIndex:
    """Arrivals per chapter and town, with prefix sums for counting any run of chapters."""

    def __init__(self, b: TaskBuilder) -> None:
        w = b.w
        n = len(b.doc.chapters)
        self.by_chapter: list[list[tuple[int, int, int]]] = [[] for _ in range(n)]
        for p in w.people:
            for i in range(1, len(p.residence)):
                t, place = p.residence[i]
                self.by_chapter[min(int(t), n - 1)].append((place, p.id, i))
        # Where the text says a namesake (a name one edit away from a real person, who is no one
        # in the world) moved to a town: a reader of the run alone would count it, the world
        # does not, so runs holding one for the counted town are not asked about.
        self.namesake_arrivals: dict[str, list[int]] = {}
        for d in getattr(b.doc, "distractors", ()):
            if d.kind == "namesake" and d.relation == "residence":
                self.namesake_arrivals.setdefault(d.value, []).append(d.spans[-1][0])
        self.prefix = [[0] * (n + 1) for _ in w.places]
        for c, arrivals in enumerate(self.by_chapter):
            for row in self.prefix:
                row[c + 1] = row[c]
            for place, _, _ in arrivals:
                self.prefix[place][c + 1] += 1

    def places_counting(self, target: int, first: int, last: int) -> list[int]:
        """Every town, in index order, with exactly ``target`` arrivals in chapters first..last
        (one pass over the rows: this is asked for every run of every aggregation draw)."""
        end = last + 1
        return [p for p, row in enumerate(self.prefix) if row[end] - row[first] == target]

    def has_namesake(self, town: str, start: int, end: int) -> bool:
        return any(start <= at < end for at in self.namesake_arrivals.get(town, ()))


def _runs(b: TaskBuilder, want: float, hi: int) -> list[tuple[int, int]]:
    """Every run of chapters [a, z] that is the shortest run from a holding ``want`` chars."""
    chapters = b.doc.chapters
    out = []
    z = 0
    for a in range(len(chapters)):
        z = max(z, a)
        while z < len(chapters) - 1 and chapters[z].end - chapters[a].start < want:
            z += 1
        size = chapters[z].end - chapters[a].start
        if size < want:
            break
        if size <= hi:
            out.append((a, z))
    return out


def aggregation(b: TaskBuilder, rng: random.Random, target: int) -> Task | None:
    """A count question whose gold is ``target``, or None if no run of the drawn length has a
    town with exactly that many arrivals."""
    if b.arrivals is None:
        b.arrivals = ArrivalIndex(b)
    index = b.arrivals
    lo, hi = region_bounds(len(b.doc.text))
    want = lo + (hi - lo) * rng.random()
    matches = [
        (a, z, place)
        for a, z in _runs(b, want, hi)
        for place in index.places_counting(target, a, z)
    ]
    if not matches:
        b.reject("no_count_match")
        return None
    chapters = b.doc.chapters
    places = b.w.places
    matches = [
        (a, z, place)
        for a, z, place in matches
        if not index.has_namesake(places[place].name, chapters[a].start, chapters[z].end)
    ]
    if not matches:
        b.reject("namesake_in_run")
        return None
    a, z, place = pick(rng, matches)
    name = places[place].name
    evidence = [
        b.ev(("residence", pid, i), (name,), sentence_only=True)
        for c in range(a, z + 1)
        for pl, pid, i in index.by_chapter[c]
        if pl == place
    ]
    evidence.sort(key=lambda e: (0, 0) if e is None else e.span)
    answer = _number(target)
    slots = {"town": name, "first": a + 1, "last": z + 1}  # chapter numbers as printed
    region = (chapters[a].start, chapters[z].end)
    return b.task(rng, "arrivals", slots, answer, evidence, region=region)


def comparison(b: TaskBuilder, rng: random.Random) -> Task | None:
    """Two contested years of the world's question plan: birth years or founding years."""
    item = b.unasked(rng, b.w.contested.pairs)
    if item is None:
        return None
    (kind, i, _), (_, j, _) = item
    r = rng.random()
    if kind == "birth":
        relation = (
            "older_birth_year" if r < 0.35 else "younger_birth_year" if r < 0.65 else "age_gap"
        )
    else:
        relation = "older_org_year" if r < 0.5 else "org_year_gap"
    w = b.w
    if kind == "birth":
        p, q = w.people[i], w.people[j]
        evidence = [
            b.ev(("birth", p.id, 0), person_forms(p), (str(p.birth_year),)),
            b.ev(("birth", q.id, 0), person_forms(q), (str(q.birth_year),)),
        ]
        slots: dict[str, object] = {"person": p, "person2": q.name}
        years = sorted((p.birth_year, q.birth_year))
    else:
        g, h = w.organisations[i], w.organisations[j]
        evidence = [
            b.ev(("founding", g.id, 0), (g.name,), (str(g.founded_year),)),
            b.ev(("founding", h.id, 0), (h.name,), (str(h.founded_year),)),
        ]
        slots = {"org": g.name, "org2": h.name}
        years = sorted((g.founded_year, h.founded_year))
    if relation in ("age_gap", "org_year_gap"):
        answer = _number(years[1] - years[0])
    else:
        answer = (str(years[1] if relation == "younger_birth_year" else years[0]), ())
    task = b.task(rng, relation, slots, answer, evidence)
    return None if task is None else replace(task, plan_item=item)


_NUMBER_WORDS = (*NUMBER_WORDS, "thirteen", "fourteen", "fifteen", "sixteen")


def _number(value: int) -> tuple[str, tuple[str, ...]]:
    return str(value), ((_NUMBER_WORDS[value],) if value < len(_NUMBER_WORDS) else ())
