"""Question families over a generated document, and the checks every question must pass.

A family proposes a question from the *world* (gold = world state), points at the needle spans the
renderer recorded, and offers several wordings. A wording is kept only if it passes
:func:`check_task`: the gold is unique, the gold is not written in the question, every supporting
span exists and contains its evidence, and (for depth >= 1) the question does not share its
distinctive words with the needle, so that finding the needle takes reading, not string matching.
"""

from __future__ import annotations

import itertools
import math
import random
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from .document import GENERATOR_VERSION, Document
from .render import NUMBER_WORDS, article
from .world import Person, World

# Family name -> minimum recursion depth needed with a ~4K-token root and ~3K-token slices.
FAMILIES: dict[str, int] = {
    "exact_id": 0,
    "single_hop": 1,
    "multi_hop": 1,
    "temporal": 1,
    "aggregation": 2,
    "comparison": 1,
}
DEFAULT_FAMILY_MIX: dict[str, float] = {
    "exact_id": 0.15,
    "single_hop": 0.25,
    "multi_hop": 0.20,
    "temporal": 0.15,
    "aggregation": 0.15,
    "comparison": 0.10,
}

OVERLAP_MAX = 0.25  # share of the question's content words allowed to appear in a needle
MULTI_HOP_GAP_TOKENS = 20_000  # hops at least this far apart (or a quarter of a short doc)
AGGREGATION_MIN_TOKENS = 16_000  # a counted region is longer than several slices
MAX_COUNT = 8
MAJORITY_KEEP = 0.25  # chance of keeping a question whose gold is the most prominent entity
ORDINALS = ("zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh")
TIMES = ("never", "once", "twice", "three times", "four times", "five times", "six times")

_STOPWORD_TEXT = """
    a an the of in on at to for from by with and or but as is was were be been being did do does
    had has have that this these those it its which what who whom whose where when how many much
    after before just right immediately once twice times three four five six between across
    through into over under whichever whoever one any some his her their he she they them
    town year person people someone object item organisation chapter chapters name give
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_WORD = re.compile(r"[a-z]+")


def normalize_answer(text: str) -> str:
    """Lowercase, drop punctuation and articles, collapse whitespace (the reward's matcher)."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"[^\w\s]|_", " ", text)
    return " ".join(t for t in text.split() if t not in ("a", "an", "the"))


def matches_gold(prediction: str, answer: str, aliases: list[str] | tuple[str, ...] = ()) -> bool:
    """Normalised exact match against the answer or any alias."""
    pred = normalize_answer(prediction)
    return bool(pred) and any(pred == normalize_answer(a) for a in (answer, *aliases))


def _stem(word: str) -> str:
    for suffix in ("ation", "ing", "ed", "es", "er", "s", "e"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:5]


@dataclass(frozen=True)
class Evidence:
    """A supporting span and what it must contain: every group needs one of its strings."""

    span: tuple[int, int]
    required: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Task:
    question: str
    answer: str
    aliases: tuple[str, ...]
    family: str
    answer_type: str  # person / place / organisation / artefact / role / year / number
    evidence: tuple[Evidence, ...]
    # Every value the question's semantics allow, computed from the world: must be one.
    gold_values: tuple[str, ...]
    wordings: tuple[str, ...] = ()  # alternative questions, tried in order
    # Character range [start, end) of the text the question asks about as a whole (the counted
    # chapters of an aggregation); None when the answer rests on the supporting spans alone.
    region: tuple[int, int] | None = None

    @property
    def depth(self) -> int:
        return FAMILIES[self.family]

    def row(self, document: Document) -> dict:
        return {
            "question": self.question,
            "answer": self.answer,
            "aliases": list(self.aliases),
            "seed": document.seed,
            "family": self.family,
            "depth": self.depth,
            "spans": [[s, e] for s, e in (ev.span for ev in self.evidence)],
            "doc_tokens": document.doc_tokens,
            "region": None if self.region is None else list(self.region),
        }


@dataclass
class _Context:
    """Per-document lookups shared by the families and the checks."""

    document: Document
    name_words: frozenset[str]
    min_gap: int
    region_chars: int
    rejections: dict[str, int] = field(default_factory=dict)


def _name_words(world: World) -> frozenset[str]:
    words: set[str] = {"mistress", "master"}
    for p in world.people:
        words.update(_WORD.findall(" ".join([p.name, *p.aliases()]).lower()))
    for x in (*world.places, *world.organisations, *world.artefacts):
        words.update(_WORD.findall(x.name.lower()))
    return frozenset(words)


def _content_stems(text: str, exclude: frozenset[str]) -> set[str]:
    return {
        _stem(w) for w in _WORD.findall(text.lower()) if w not in _STOPWORDS and w not in exclude
    }


def lexical_overlap(question: str, needle: str, name_words: frozenset[str]) -> float:
    """Share of the question's content words (names excluded) whose stem occurs in the needle."""
    q = _content_stems(question, name_words)
    if not q:
        return 0.0
    return len(q & _content_stems(needle, name_words)) / len(q)


def check_task(
    document: Document, task: Task, name_words: frozenset[str] | None = None
) -> str | None:
    """Return why ``task`` must be rejected, or None when it passes every check."""
    if len(set(task.gold_values)) != 1 or normalize_answer(task.gold_values[0]) != normalize_answer(
        task.answer
    ):
        return "gold_not_unique"
    q_norm = f" {normalize_answer(task.question)} "
    for form in (task.answer, *task.aliases):
        norm = normalize_answer(form)
        if not norm or f" {norm} " in q_norm:
            return "gold_in_question"
    if not task.evidence:
        return "span_missing"
    text = document.text
    for ev in task.evidence:
        start, end = ev.span
        if not (0 <= start < end <= len(text)):
            return "span_missing"
        chunk = text[start:end].lower()
        for group in ev.required:
            if not any(s.lower() in chunk for s in group):
                return "span_without_evidence"
    if FAMILIES[task.family] >= 1:
        words = name_words if name_words is not None else _name_words(document.world)
        for ev in task.evidence:
            if lexical_overlap(task.question, text[ev.span[0] : ev.span[1]], words) > OVERLAP_MAX:
                return "lexical_overlap"
    return None


# ------------------------------------------------------------------------ shared lookups


def _prominent(world: World) -> frozenset[str]:
    """The place and the organisation that most of the story happens around (longest total
    residence / employment). A blind guesser would answer with these, so questions whose gold is
    one of them are thinned out (as OOLONG resamples labels so the majority cannot be guessed)."""
    end = float(world.n_chapters)
    stay = [0.0] * len(world.places)
    for p in world.people:
        for i, (t, pl) in enumerate(p.residence):
            nxt = p.residence[i + 1][0] if i + 1 < len(p.residence) else end
            stay[pl] += nxt - t
    work = [0.0] * len(world.organisations)
    for p in world.people:
        for i, (t, g, _) in enumerate(p.employment):
            nxt = p.employment[i + 1][0] if i + 1 < len(p.employment) else end
            work[g] += nxt - t
    top_place = max(range(len(stay)), key=lambda i: (stay[i], -i))
    top_org = max(range(len(work)), key=lambda i: (work[i], -i))
    return frozenset({world.places[top_place].name, world.organisations[top_org].name})


def _person_forms(p: Person) -> tuple[str, ...]:
    return (p.name, p.formal)


def _pick(rng: random.Random, seq):
    return seq[int(rng.random() * len(seq))]


class TaskBuilder:
    """Proposes candidate tasks of each family for one document."""

    def __init__(self, document: Document) -> None:
        self.doc = document
        self.w = document.world
        total = len(document.text)
        # Short documents cannot hold 20K-token gaps: ask for a quarter of the text instead.
        self.min_gap = min(MULTI_HOP_GAP_TOKENS * 4, total // 4)
        self.region_chars = min(AGGREGATION_MIN_TOKENS * 4, int(total * 0.6))
        self.name_words = _name_words(self.w)
        self.rejections: dict[str, int] = {}
        self.prominent = _prominent(self.w)
        self.proposers = {
            "exact_id": self._exact_id,
            "single_hop": self._single_hop,
            "multi_hop": self._multi_hop,
            "temporal": self._temporal,
            "aggregation": self._aggregation,
            "comparison": self._comparison,
        }

    # ---- spans
    def span(self, key: tuple[str, int, int]) -> tuple[int, int] | None:
        return self.doc.spans.get(key)

    def ev(self, key: tuple[str, int, int], *groups: tuple[str, ...]) -> Evidence | None:
        s = self.span(key)
        return None if s is None else Evidence(s, tuple(groups))

    # ---- answers of each type: (answer, aliases)
    def person_answer(self, pid: int) -> tuple[str, tuple[str, ...]]:
        p = self.w.people[pid]
        return p.name, tuple(p.aliases())

    def place_answer(self, pl: int) -> tuple[str, tuple[str, ...]]:
        return self.w.places[pl].name, ()

    def org_answer(self, g: int) -> tuple[str, tuple[str, ...]]:
        org = self.w.organisations[g]
        return org.name, tuple(org.aliases())

    def art_answer(self, a: int) -> tuple[str, tuple[str, ...]]:
        art = self.w.artefacts[a]
        return art.name, tuple(art.aliases())

    def propose(self, family: str, rng: random.Random) -> Task | None:
        return self.proposers[family](rng)

    # ------------------------------------------------------------------------ families
    def _exact_id(self, rng: random.Random) -> Task | None:
        w = self.w
        if rng.random() < 0.6:
            p = _pick(rng, w.people)
            e = self.ev(("permit", p.id, 0), (p.permit,), _person_forms(p))
            ans, aliases = self.person_answer(p.id)
            token, kind = p.permit, "person"
            wordings = [
                f"Whose name is on travel permit {token}?",
                f"Who is the holder of permit {token}?",
                f"To whom was permit {token} issued?",
            ]
        else:
            a = _pick(rng, w.artefacts)
            e = self.ev(("mark", a.id, 0), (a.mark,), (a.name,))
            ans, aliases = self.art_answer(a.id)
            token, kind = a.mark, "artefact"
            wordings = [
                f"Which object carries the registry mark {token}?",
                f"What item was logged under the mark {token}?",
            ]
        if e is None:
            return None
        # The token must be unique in the text, or "the" holder is ambiguous.
        hits = self.doc.text.count(token)
        gold = (ans,) if hits == 1 else (ans, f"<{hits} occurrences>")
        return _task(wordings, rng, ans, aliases, "exact_id", kind, (e,), gold)

    def _single_hop(self, rng: random.Random) -> Task | None:
        w = self.w
        r = rng.random()
        if r < 0.2:
            a = _pick(rng, w.artefacts)
            m = w.people[a.maker]
            e = self.ev(("maker", a.id, 0), (a.name,), _person_forms(m))
            ans, aliases = self.person_answer(m.id)
            kind = "person"
            wordings = [
                f"Who is credited as the creator of {a.name}?",
                f"Whose craftsmanship produced {a.name}?",
                f"Which artisan is responsible for {a.name}?",
            ]
        elif r < 0.4:
            p = _pick(rng, w.people)
            if p.mentor is None:
                return None
            m = w.people[p.mentor]
            e = self.ev(("mentor", p.id, 0), _person_forms(p), _person_forms(m))
            ans, aliases = self.person_answer(m.id)
            kind = "person"
            wordings = [
                f"Who was {p.name}'s teacher?",
                f"Which master instructed {p.name}?",
                f"From whom did {p.name} receive instruction?",
            ]
        elif r < 0.6:
            p = _pick(rng, w.people)
            place = w.places[p.birthplace]
            e = self.ev(("birth", p.id, 0), _person_forms(p), (place.name,))
            ans, aliases = self.place_answer(place.id)
            kind = "place"
            wordings = [
                f"What town is {p.name}'s birthplace?",
                f"Where does {p.name} originally hail from?",
                f"In which town did {p.name}'s life begin?",
            ]
        elif r < 0.7:
            p = _pick(rng, w.people)
            e = self.ev(("birth", p.id, 0), _person_forms(p), (str(p.birth_year),))
            ans, aliases = str(p.birth_year), ()
            kind = "year"
            wordings = [
                f"What is {p.name}'s year of birth?",
                f"In which year did {p.name}'s life begin?",
            ]
        elif r < 0.8:
            g = _pick(rng, w.organisations)
            place = w.places[g.seat]
            e = self.ev(("seat", g.id, 0), (g.name,), (place.name,))
            ans, aliases = self.place_answer(place.id)
            kind = "place"
            wordings = [
                f"Where is {g.name} based?",
                f"Which town hosts the main hall of {g.name}?",
                f"In what town does {g.name} have its base?",
            ]
        elif r < 0.9:
            g = _pick(rng, w.organisations)
            f = w.people[g.founder]
            e = self.ev(("founding", g.id, 0), (g.name,), _person_forms(f))
            ans, aliases = self.person_answer(f.id)
            kind = "person"
            wordings = [
                f"Who was the originator of {g.name}?",
                f"Name the person behind the creation of {g.name}.",
                f"Whom does {g.name} have to thank for its beginning?",
            ]
        else:
            g = _pick(rng, w.organisations)
            e = self.ev(("founding", g.id, 0), (g.name,), (str(g.founded_year),))
            ans, aliases = str(g.founded_year), ()
            kind = "year"
            wordings = [
                f"In what year did {g.name} begin?",
                f"What is the year of origin of {g.name}?",
            ]
        if e is None:
            return None
        return _task(wordings, rng, ans, aliases, "single_hop", kind, (e,), (ans,))

    def _multi_hop(self, rng: random.Random) -> Task | None:
        w = self.w
        people = w.people
        chain = _pick(rng, ("AB", "MB", "AM", "FB", "FM", "AMB", "MY"))
        hops: list[Evidence | None] = []
        if chain[0] == "A":
            a = _pick(rng, w.artefacts)
            cur = people[a.maker]
            hops.append(self.ev(("maker", a.id, 0), (a.name,), _person_forms(cur)))
            lead = {
                "AB": [
                    f"What is the birthplace of the craftsperson responsible for {a.name}?",
                    f"In which town did the life of the artisan behind {a.name} begin?",
                ],
                "AM": [
                    f"Who instructed the artisan responsible for {a.name}?",
                    f"Which master schooled the creator of {a.name}?",
                ],
                "AMB": [
                    f"What is the birthplace of the instructor of the artisan behind {a.name}?",
                    f"In which town did the life of the master who schooled the creator of "
                    f"{a.name} begin?",
                ],
            }[chain]
        elif chain[0] == "F":
            g = _pick(rng, w.organisations)
            cur = people[g.founder]
            hops.append(self.ev(("founding", g.id, 0), (g.name,), _person_forms(cur)))
            lead = {
                "FB": [
                    f"What is the birthplace of the originator of {g.name}?",
                    f"In which town did the life of the person who set up {g.name} begin?",
                ],
                "FM": [
                    f"Who instructed the originator of {g.name}?",
                    f"Which master schooled the person behind the creation of {g.name}?",
                ],
            }[chain]
        else:  # "M..": start from a person and go to the mentor
            cur = _pick(rng, people)
            lead = {
                "MB": [
                    f"What is the birthplace of {cur.name}'s teacher?",
                    f"In which town did the life of the master who instructed {cur.name} begin?",
                ],
                "MY": [
                    f"In which year did the life of {cur.name}'s teacher begin?",
                    f"What is the year of birth of the master who instructed {cur.name}?",
                ],
            }[chain]
        # Remaining hops: M = mentor, B = birthplace, Y = birth year.
        rest = chain[1:] if chain[0] in "AF" else chain
        for step in rest:
            if step == "M":
                if cur.mentor is None:
                    return None
                nxt = people[cur.mentor]
                hops.append(self.ev(("mentor", cur.id, 0), _person_forms(cur), _person_forms(nxt)))
                cur = nxt
            elif step == "B":
                place = w.places[cur.birthplace]
                hops.append(self.ev(("birth", cur.id, 0), _person_forms(cur), (place.name,)))
                ans, aliases, kind = place.name, (), "place"
            else:  # Y
                hops.append(
                    self.ev(("birth", cur.id, 0), _person_forms(cur), (str(cur.birth_year),))
                )
                ans, aliases, kind = str(cur.birth_year), (), "year"
        if chain.endswith("M"):
            ans, aliases = self.person_answer(cur.id)
            kind = "person"
        if any(h is None for h in hops):
            return None
        evidence = tuple(h for h in hops if h is not None)
        for first, second in itertools.pairwise(evidence):
            if abs(second.span[0] - first.span[0]) < self.min_gap:
                self.rejections["hops_too_close"] = self.rejections.get("hops_too_close", 0) + 1
                return None
        return _task(lead, rng, ans, aliases, "multi_hop", kind, evidence, (ans,))

    def _temporal(self, rng: random.Random) -> Task | None:
        w = self.w
        r = rng.random()
        if r < 0.35:
            p = _pick(rng, w.people)
            moves = len(p.residence) - 1
            if moves < 2:
                return None
            k = 2 + int(rng.random() * (moves - 1)) if moves >= 3 else 2
            k = min(k, moves)
            pl = p.residence[k][1]
            evidence = []
            for i in range(k + 1):
                place = w.places[p.residence[i][1]].name
                evidence.append(self.ev(("residence", p.id, i), _person_forms(p), (place,)))
            ans, aliases = self.place_answer(pl)
            kind = "place"
            wordings = [
                f"After {p.name}'s {ORDINALS[k]} change of address, which town was home?",
                f"Which town did {p.name} call home following {p.possessive} {ORDINALS[k]} "
                f"relocation?",
                f"Once {p.name} had changed towns {TIMES[k]}, where was {p.possessive} home?",
            ]
            gold = (ans,)
        elif r < 0.5:
            p = _pick(rng, w.people)
            if len(p.residence) < 3:
                return None
            k = 2 + int(rng.random() * (len(p.residence) - 2))
            target = p.residence[k][1]
            target_name = w.places[target].name
            ans, aliases = self.place_answer(p.residence[k - 1][1])
            kind = "place"
            # Every stay that ended with a move to the target (usually one).
            gold = tuple(
                w.places[p.residence[i - 1][1]].name
                for i in range(1, len(p.residence))
                if p.residence[i][1] == target
            )
            evidence = [
                self.ev(("residence", p.id, k - 1), _person_forms(p), (ans,)),
                self.ev(("residence", p.id, k), _person_forms(p), (target_name,)),
            ]
            wordings = [
                f"Which town was {p.name}'s home just before {target_name}?",
                f"Where was {p.name} staying immediately prior to {target_name}?",
            ]
        elif r < 0.75:
            a = _pick(rng, w.artefacts)
            if len(a.owners) < 2:
                return None
            k = 1 + int(rng.random() * (len(a.owners) - 1))
            if rng.random() < 0.5:
                y = a.owners[k][1]
                y_name = w.people[y].name
                gold = tuple(
                    w.people[a.owners[i - 1][1]].name
                    for i in range(1, len(a.owners))
                    if a.owners[i][1] == y
                )
                ans, aliases = self.person_answer(a.owners[k - 1][1])
                evidence = [
                    self.ev(
                        ("owner", a.id, k - 1),
                        (a.name,),
                        _person_forms(w.people[a.owners[k - 1][1]]),
                    ),
                    self.ev(("owner", a.id, k), (a.name,), _person_forms(w.people[y])),
                ]
                wordings = [
                    f"Who had {a.name} immediately before {y_name} did?",
                    f"Who held {a.name} right before it came to {y_name}?",
                ]
            else:
                ans, aliases = self.person_answer(a.owners[k][1])
                gold = (ans,)
                evidence = [
                    self.ev(("owner", a.id, i), (a.name,), _person_forms(w.people[a.owners[i][1]]))
                    for i in range(k + 1)
                ]
                wordings = [
                    f"Who held {a.name} after its {ORDINALS[k]} change of hands?",
                    f"In whose possession was {a.name} after it had changed hands {TIMES[k]}?",
                ]
            kind = "person"
        else:
            p = _pick(rng, w.people)
            if len(p.employment) < 2:
                return None
            k = 1 + int(rng.random() * (len(p.employment) - 1))
            evidence = [
                self.ev(
                    ("employment", p.id, i),
                    _person_forms(p),
                    (w.organisations[p.employment[i][1]].name,),
                )
                for i in range(k + 1)
            ]
            if rng.random() < 0.6:
                ans, aliases = self.org_answer(p.employment[k][1])
                kind = "organisation"
                wordings = [
                    f"Which organisation did {p.name} serve after {p.possessive} "
                    f"{ORDINALS[k]} change of employer?",
                    f"For which organisation was {p.name} working once {p.pronoun} had changed "
                    f"employers {TIMES[k]}?",
                ]
            else:
                role = p.employment[k][2]
                ans, aliases = role, ((role.split()[-1],) if " " in role else ())
                kind = "role"
                wordings = [
                    f"What post did {p.name} hold after {p.possessive} {ORDINALS[k]} change of "
                    f"employer?",
                    f"What was {p.name}'s occupation once {p.pronoun} had changed employers "
                    f"{TIMES[k]}?",
                ]
                evidence[-1] = self.ev(
                    ("employment", p.id, k),
                    _person_forms(p),
                    (w.organisations[p.employment[k][1]].name,),
                    (article(role),),
                )
            gold = (ans,)
        if any(e is None for e in evidence):
            return None
        ev_t = tuple(e for e in evidence if e is not None)
        return _task(wordings, rng, ans, aliases, "temporal", kind, ev_t, gold)

    def _aggregation(self, rng: random.Random, target: int | None = None) -> Task | None:
        w, doc = self.w, self.doc
        chapters = doc.chapters
        n = len(chapters)
        # A run of chapters holding at least region_chars (up to 2.5x, so that larger counts
        # exist on long documents), starting at a random chapter.
        want = self.region_chars * (1.0 + 1.5 * rng.random())
        a = int(rng.random() * n)
        b = a
        while b < n - 1 and chapters[b].end - chapters[a].start < want:
            b += 1
        while a > 0 and chapters[b].end - chapters[a].start < want:
            a -= 1
        if chapters[b].end - chapters[a].start < self.region_chars:
            return None
        if target is None:
            target = 1 + int(rng.random() * MAX_COUNT)
        use_orgs = rng.random() < 0.4
        counts: dict[int, list] = {}
        if use_orgs:
            for p in w.people:
                for i in range(1, len(p.employment)):
                    if a <= int(p.employment[i][0]) <= b:
                        counts.setdefault(p.employment[i][1], []).append((p, i))
        else:
            for p in w.people:
                for i in range(1, len(p.residence)):
                    if a <= int(p.residence[i][0]) <= b:
                        counts.setdefault(p.residence[i][1], []).append((p, i))
        matching = [key for key in sorted(counts) if len(counts[key]) == target]
        if not matching:
            self.rejections["no_count_match"] = self.rejections.get("no_count_match", 0) + 1
            return None
        key = _pick(rng, matching)
        hits = counts[key]
        ans, aliases = str(target), (NUMBER_WORDS[target],)
        ca, cb = a + 1, b + 1  # chapter numbers as printed
        if use_orgs:
            org = w.organisations[key]
            name = org.name
            evidence = [
                self.ev(("employment", p.id, i), _person_forms(p), (name,)) for p, i in hits
            ]
            wordings = [
                f"Across chapters {ca} to {cb}, how many times did someone join the staff of "
                f"{name}?",
                f"How many new recruits did {name} gain between chapter {ca} and chapter {cb}?",
            ]
        else:
            name = w.places[key].name
            evidence = [self.ev(("residence", p.id, i), _person_forms(p), (name,)) for p, i in hits]
            wordings = [
                f"Across chapters {ca} to {cb}, how many times did someone take up residence in "
                f"{name}?",
                f"How many arrivals of new residents did {name} see between chapter {ca} and "
                f"chapter {cb}?",
            ]
        if any(e is None for e in evidence):
            return None
        ev_t = tuple(sorted((e for e in evidence if e is not None), key=lambda e: e.span))
        task = _task(wordings, rng, ans, aliases, "aggregation", "number", ev_t, (ans,))
        return replace(task, region=(chapters[a].start, chapters[b].end))

    def _comparison(self, rng: random.Random) -> Task | None:
        w = self.w
        r = rng.random()
        if r < 0.75:
            p, q = _pick(rng, w.people), _pick(rng, w.people)
            if p.id == q.id or p.birth_year == q.birth_year:
                return None
            older, younger = (p, q) if p.birth_year < q.birth_year else (q, p)
            evidence = (
                self.ev(("birth", p.id, 0), _person_forms(p), (str(p.birth_year),)),
                self.ev(("birth", q.id, 0), _person_forms(q), (str(q.birth_year),)),
            )
            if r < 0.3:
                ans = str(older.birth_year)
                wordings = [
                    f"What is the year of birth of whichever of {p.name} and {q.name} is older?",
                    f"Give the birth year of the senior of {p.name} and {q.name}.",
                ]
            elif r < 0.5:
                ans = str(younger.birth_year)
                wordings = [
                    f"What is the year of birth of whichever of {p.name} and {q.name} is younger?",
                    f"Give the birth year of the junior of {p.name} and {q.name}.",
                ]
            else:
                gap = younger.birth_year - older.birth_year
                ans = str(gap)
                wordings = [
                    f"How many years separate the births of {p.name} and {q.name}?",
                    f"What is the age gap, in years, between {p.name} and {q.name}?",
                ]
                aliases = (NUMBER_WORDS[gap],) if gap < len(NUMBER_WORDS) else ()
                kind = "number"
                if any(e is None for e in evidence):
                    return None
                ev_t = tuple(e for e in evidence if e is not None)
                return _task(wordings, rng, ans, aliases, "comparison", kind, ev_t, (ans,))
        else:
            g, h = _pick(rng, w.organisations), _pick(rng, w.organisations)
            if g.id == h.id or g.founded_year == h.founded_year:
                return None
            evidence = (
                self.ev(("founding", g.id, 0), (g.name,), (str(g.founded_year),)),
                self.ev(("founding", h.id, 0), (h.name,), (str(h.founded_year),)),
            )
            ans = str(min(g.founded_year, h.founded_year))
            wordings = [
                f"In what year did the older of {g.name} and {h.name} begin?",
                f"Of {g.name} and {h.name}, what is the year of origin of the senior one?",
            ]
        if any(e is None for e in evidence):
            return None
        ev_t = tuple(e for e in evidence if e is not None)
        return _task(wordings, rng, ans, (), "comparison", "year", ev_t, (ans,))


def _task(
    wordings: list[str],
    rng: random.Random,
    answer: str,
    aliases: tuple[str, ...],
    family: str,
    answer_type: str,
    evidence: tuple[Evidence, ...],
    gold_values: tuple[str, ...],
) -> Task:
    order = list(wordings)
    rng.shuffle(order)
    norm = normalize_answer(answer)
    clean: list[str] = []
    for a in aliases:
        if normalize_answer(a) != norm and a not in clean:
            clean.append(a)
    return Task(
        question=order[0],
        answer=answer,
        aliases=tuple(clean),
        family=family,
        answer_type=answer_type,
        evidence=evidence,
        gold_values=gold_values,
        wordings=tuple(order),
    )


def _allocate(n: int, mix: Mapping[str, float], rng: random.Random) -> dict[str, int]:
    """Split n over families: floors of n*share, remainders drawn by share (unbiased on average)."""
    total = sum(mix.values())
    shares = {f: mix[f] / total for f in FAMILIES if mix.get(f, 0) > 0}
    counts = {f: math.floor(n * s) for f, s in shares.items()}
    rest = n - sum(counts.values())
    fams = list(shares)
    cum, acc = [], 0.0
    for f in fams:
        acc += n * shares[f] - counts[f]
        cum.append(acc)
    for _ in range(rest):
        x = rng.random() * cum[-1]
        i = next(j for j, c in enumerate(cum) if x < c or j == len(cum) - 1)
        counts[fams[i]] += 1
    return counts


def make_tasks(
    document: Document,
    n: int,
    families: Mapping[str, float] | None = None,
    rng_seed: int | None = None,
) -> list[dict]:
    """Up to ``n`` checked question rows about ``document`` (exactly n unless the document is too
    small to hold them), with families drawn according to ``families`` (name -> weight)."""
    mix = dict(DEFAULT_FAMILY_MIX if families is None else families)
    unknown = set(mix) - set(FAMILIES)
    if unknown:
        raise ValueError(f"unknown task families: {sorted(unknown)}")
    seed = document.seed if rng_seed is None else rng_seed
    rng = random.Random(f"{GENERATOR_VERSION}:tasks:{document.seed}:{document.doc_tokens}:{seed}")
    builder = TaskBuilder(document)
    counts = _allocate(n, mix, rng)
    tasks: list[Task] = []
    seen: set[str] = set()
    order = [f for f in FAMILIES if counts.get(f)]
    shortfall = 0
    for family in order:
        shortfall += counts[family] - _fill(builder, family, counts[family], rng, tasks, seen)
    # A family that ran dry (tiny documents) hands its quota to the others, in mix order.
    for family in order:
        if shortfall <= 0:
            break
        shortfall -= _fill(builder, family, shortfall, rng, tasks, seen)
    rng.shuffle(tasks)
    return [t.row(document) for t in tasks]


def _fill(
    builder: TaskBuilder,
    family: str,
    want: int,
    rng: random.Random,
    out: list[Task],
    seen: set[str],
) -> int:
    got = 0
    attempts = 0
    limit = 200 * want + 200
    target, tries = 0, 0
    while got < want and attempts < limit:
        attempts += 1
        if family == "aggregation":
            # Fix a uniformly drawn count first and search for it, so the answers are flat
            # over 1..MAX_COUNT instead of piling up on the easy small counts.
            if target == 0 or tries >= 150:
                target, tries = 1 + int(rng.random() * MAX_COUNT), 0
            tries += 1
            task = builder._aggregation(rng, target)
        else:
            task = builder.propose(family, rng)
        if task is None:
            continue
        accepted = None
        for wording in task.wordings:
            cand = replace(task, question=wording)
            reason = check_task(builder.doc, cand, builder.name_words)
            if reason is None:
                accepted = cand
                break
            builder.rejections[reason] = builder.rejections.get(reason, 0) + 1
        if accepted is None or accepted.question in seen:
            continue
        if accepted.answer in builder.prominent and rng.random() > MAJORITY_KEEP:
            # Keep the document's most prominent entity from becoming a free guess.
            builder.rejections["majority_answer"] = builder.rejections.get("majority_answer", 0) + 1
            continue
        seen.add(accepted.question)
        out.append(accepted)
        got += 1
        target = 0
    return got


def propose_tasks(document: Document, family: str, n: int, rng_seed: int = 0) -> list[Task]:
    """Checked :class:`Task` objects (with evidence detail) of one family; for tests and tools."""
    rng = random.Random(f"{GENERATOR_VERSION}:propose:{document.seed}:{family}:{rng_seed}")
    builder = TaskBuilder(document)
    out: list[Task] = []
    _fill(builder, family, n, rng, out, set())
    return out
