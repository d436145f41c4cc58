"""Code-only attacks on the verdicts: which statement of a contested fact stands, without reading.

Each attack is a *rater*: from a document's text alone it gives every statement followed by a
verdict (`verdict_text.find_verdicts`) a score, higher for "this one stands". `VerdictSolver`
is the keyword solver (`keyword_solver.py`) with one change: a question about a one-off relation
(anything but where someone lived or who held an object) is answered from the statements about
its name that a verdict follows, the best-rated first, the keyword score breaking ties. Every
other question is the keyword solver's.

* `LexiconRater` (fitted on `train`, its annotations allowed): the compositional rule, a sign
  for each verb and outcome learned on `train` (the signs that reproduce the labels best), an
  unknown word signed like the `train` words that share its first or last three letters (and a
  word of `CORRECTION_CUES`, "refuted", like those of `train`), times -1 per negation or word of
  error elsewhere in the verdict if that helps on `train`, all multiplied; where a part has no
  sign, the word weights (the log-odds of each word in a standing verdict against a cancelling
  one) rate the verdict between the two signs.
* `OnePickRater`: one decision per document, applied to every statement of it: the rarest (or
  commonest) exact verdict, triple (first verb, second verb, outcome) or pair of parts, or the
  one part that means "stands", chosen per document as the part held by exactly one statement of
  the most subject groups. `fit_one_pick` keeps the rule that picks the truth most often on
  `train`.
* `SignSystemRater`: a sign for every verb and outcome of the document, found from the document
  alone: a split has as many backing verbs as rejecting ones and as many outcomes as challenges
  (read off `train`), and five statements of six are false, so the signs under which the fewest
  verdicts stand are searched for (swaps that keep the halves even, from random starts).
* `GroupSignRater`: the same search with the stronger constraint, exactly one standing
  statement per fact, the facts grouped from the text by subject (`statement_groups`). Given
  outside knowledge of some words' signs (``known``; `english_signs.english_sign` for general
  English), it fixes those and searches for the rest.

Nothing of the evaluated split but its text is read; `verdict_audit.py` measures them.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol
from weakref import WeakKeyDictionary

import numpy as np

from fathom_lab.audit.keyword_solver import (
    CORRECTION_CUES,
    KeywordSolver,
    Text,
    WordWeights,
)
from fathom_lab.audit.verdict_text import (
    Verdict,
    find_verdicts,
    labelled_groups,
    statement_groups,
)

if TYPE_CHECKING:
    from fathom_rlm.documents import Document

_CHANGING = frozenset({"residence", "owner"})
AFFIX = 3
"""Letters of a word's start or end an unknown word is signed by."""

Ratings = dict[int, float]
"""Statement index -> score, higher for "this statement stands"."""


class Rater(Protocol):
    name: str

    def ratings(self, doc: Text, verdicts: dict[int, Verdict]) -> Ratings: ...


_VERDICTS: WeakKeyDictionary[Text, dict[int, Verdict]] = WeakKeyDictionary()


def verdicts_of(doc: Text) -> dict[int, Verdict]:
    """`find_verdicts`, once per document."""
    found = _VERDICTS.get(doc)
    if found is None:
        found = _VERDICTS[doc] = find_verdicts(doc)
    return found


def _balanced(n: int, rng: np.random.Generator) -> np.ndarray:
    signs = np.array([1] * (n // 2) + [-1] * (n - n // 2))
    rng.shuffle(signs)
    return signs


def _descend(arrays: tuple[np.ndarray, ...], cost: Callable[[], int], swaps: bool) -> int:
    """Local search in place: single sign flips, or swaps of a plus and a minus (which keep
    each half even), taken while they lower ``cost``; the cost reached."""
    now = cost()
    moved = True
    while moved:
        moved = False
        for arr in arrays:
            n = len(arr)
            moves = [(i, j) for i in range(n) for j in range(i + 1, n)] if swaps else range(n)
            for move in moves:
                if swaps and arr[move[0]] == arr[move[1]]:
                    continue
                at = list(move) if swaps else move
                arr[at] *= -1
                new = cost()
                if new < now:
                    now, moved = new, True
                else:
                    arr[at] *= -1
    return now


def fit_signs(
    triples: np.ndarray,
    sizes: tuple[int, int],
    labels: np.ndarray | None = None,
    restarts: int = 64,
    confirm: int = 4,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Signs (+1 / -1) of the verbs and of the outcomes: ``triples`` holds (first verb, second
    verb, outcome) indices, ``sizes`` the number of verbs and outcomes. With ``labels`` (does the
    verdict stand), the signs whose product disagrees with the fewest labels (single flips);
    without, the signs half plus and half minus in each part under which the fewest verdicts
    stand (swaps). Local search from random starts, the best kept; it stops after ``restarts``
    starts or once ``confirm`` of them have reached the best cost found."""
    rng = np.random.default_rng(seed)
    t = np.asarray(triples, dtype=np.int64).reshape(-1, 3)
    best: tuple[int, np.ndarray, np.ndarray] | None = None
    hits = 0
    for _ in range(restarts):
        v, o = _balanced(sizes[0], rng), _balanced(sizes[1], rng)

        def cost(v: np.ndarray = v, o: np.ndarray = o) -> int:
            stands = v[t[:, 0]] * v[t[:, 1]] * o[t[:, 2]] > 0
            return int(stands.sum() if labels is None else (stands != labels).sum())

        reached = _descend((v, o), cost, swaps=labels is None)
        if best is None or reached < best[0]:
            best, hits = (reached, v, o), 1
        elif reached == best[0]:
            hits += 1
        if hits >= confirm:
            break
    assert best is not None
    return best[1], best[2]


def part_index(verdicts: Sequence[Verdict]) -> tuple[np.ndarray, list[str], list[str]]:
    """Each verdict's (first verb, second verb, outcome) as ids into the document's sorted verbs
    and sorted outcomes, with those two lists."""
    verbs = sorted({v.first for v in verdicts} | {v.second for v in verdicts})
    outcomes = sorted({v.outcome for v in verdicts})
    vi, oi = {w: k for k, w in enumerate(verbs)}, {w: k for k, w in enumerate(outcomes)}
    triples = np.array([(vi[v.first], vi[v.second], oi[v.outcome]) for v in verdicts])
    return triples.reshape(-1, 3), verbs, outcomes


@dataclass
class SignSystemRater:
    """Per document, the verb and outcome signs under which the fewest verdicts stand."""

    restarts: int = 64
    confirm: int = 4
    name: str = "sign-system"

    def ratings(self, doc: Text, verdicts: dict[int, Verdict]) -> Ratings:
        if not verdicts:
            return {}
        keys = list(verdicts)
        triples, verbs, outcomes = part_index([verdicts[k] for k in keys])
        sizes = (len(verbs), len(outcomes))
        v, o = fit_signs(triples, sizes, restarts=self.restarts, confirm=self.confirm)
        product = v[triples[:, 0]] * v[triples[:, 1]] * o[triples[:, 2]]
        return {k: float(p) for k, p in zip(keys, product, strict=True)}


@dataclass
class GroupSignRater:
    """Per document, the verb and outcome signs under which each fact's statements (grouped
    from the text, `statement_groups`) have exactly one standing: simulated annealing over the
    signs from random starts, the table that fits the most groups kept."""

    steps: int = 6000
    restarts: int = 8
    seed: int = 0
    name: str = "sign-groups"
    known: Callable[[str], int] | None = None
    """Outside knowledge of a word's sign (+1/-1, 0 for none), fixed before the search."""

    def ratings(self, doc: Text, verdicts: dict[int, Verdict]) -> Ratings:
        groups = [g for g in statement_groups(doc, verdicts) if len(g) > 1]
        if not groups:
            return {}
        keys = [k for g in groups for k in g]
        triples, verbs, outcomes = part_index([verdicts[k] for k in keys])
        ids = np.concatenate([triples[:, :2], triples[:, 2:] + len(verbs)], axis=1)
        owner = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
        words = verbs + outcomes
        known = {i: s for i, w in enumerate(words) if self.known and (s := self.known(w))}
        signs = solve_exactly_one(
            ids, owner, len(words), self.steps, self.restarts, self.seed, known
        )
        product = signs[ids].prod(axis=1)
        return {k: float(p) for k, p in zip(keys, product, strict=True)}


def solve_exactly_one(
    ids: np.ndarray,
    owner: np.ndarray,
    n_parts: int,
    steps: int,
    restarts: int,
    seed: int,
    known: dict[int, int] | None = None,
    penalty: Callable[[np.ndarray], float] | None = None,
    fact_size: int | None = None,
) -> np.ndarray:
    """Signs of ``n_parts`` parts such that, in the most groups, exactly one row stands (the
    product of the signs of its parts ``ids`` is a plus); ``owner`` is each row's group.
    ``known`` fixes some parts' signs (part id -> +1/-1); the search flips only the others.
    ``penalty`` adds a cost of the signs to the misfit (soft anchors: signs a few groups may
    overrule). With ``fact_size`` (the statements of one fact) a group of that many rows or more
    wants one standing row per fact it holds (a group that joined two facts wants two), and a
    smaller one at most one (the rest of its fact is grouped elsewhere)."""
    rng = np.random.default_rng(seed)
    n_groups = int(owner.max()) + 1
    known = known or {}
    fixed_ids = np.fromiter(known, int, len(known))
    fixed_signs = np.fromiter(known.values(), int, len(known))
    free = np.setdiff1d(np.arange(n_parts), fixed_ids)
    if not len(free):
        steps = 0
    want, partial = np.ones(n_groups, dtype=int), np.zeros(n_groups, dtype=bool)
    if fact_size is not None:
        sizes = np.bincount(owner, minlength=n_groups)
        want = np.maximum(1, np.round(sizes / fact_size)).astype(int)
        partial = sizes < fact_size

    def misfit(signs: np.ndarray) -> float:
        standing = np.bincount(owner, signs[ids].prod(axis=1) > 0, minlength=n_groups)
        if fact_size is None:
            groups = int(np.abs(standing - 1).sum())
        else:
            off = np.where(partial, np.maximum(0, standing - 1), np.abs(standing - want))
            groups = int(off.sum())
        return groups if penalty is None else groups + penalty(signs)

    best, best_misfit = None, math.inf
    for _ in range(restarts):
        signs = rng.choice(np.array([-1, 1]), n_parts)
        signs[fixed_ids] = fixed_signs
        energy, temperature = misfit(signs), 2.0
        for _ in range(steps):
            k = free[rng.integers(len(free))]
            signs[k] *= -1
            trial = misfit(signs)
            if trial <= energy or rng.random() < math.exp((energy - trial) / temperature):
                energy = trial
            else:
                signs[k] *= -1
            temperature = max(0.05, temperature * 0.999)
        if energy < best_misfit:
            best, best_misfit = signs.copy(), energy
        if best_misfit == 0:
            break
    assert best is not None
    return best


@dataclass
class LexiconRater:
    """Word weights and signed parts learned on `train` (see the module)."""

    weights: dict[str, float] = field(default_factory=dict)
    signs: dict[tuple[str, str], int] = field(default_factory=dict)
    affixes: dict[tuple[str, str], int] = field(default_factory=dict)
    flips: bool = True
    """Whether each negation or word of error outside the verbs and the outcome flips the sign
    (`CORRECTION_CUES`; kept when it helps on `train`)."""
    cue_sign: int = 0
    """The sign of a verb or outcome that is itself a word of correction ("refuted"): the
    majority sign of such words on `train`."""
    name: str = "lexicon"

    def part_sign(self, slot: str, word: str) -> int:
        """The learned sign of a verb ("verb") or outcome ("outcome"); an unknown word takes
        the sign of the `train` words sharing its first or last `AFFIX` letters, 0 if none."""
        if (slot, word) in self.signs:
            return self.signs[slot, word]
        vote = self.affixes.get((slot, "^" + word[:AFFIX]), 0)
        vote += self.affixes.get((slot, word[-AFFIX:] + "$"), 0)
        if CORRECTION_CUES.search(word):
            vote -= 2 * self.cue_sign  # an English word of correction, signed as on `train`
        return int(np.sign(vote))

    def rate(self, verdict: Verdict) -> float:
        rest = [w for w in verdict.words if w not in verdict.triple]
        flips = sum(bool(CORRECTION_CUES.search(w)) for w in rest) if self.flips else 0
        parts = (
            self.part_sign("verb", verdict.first),
            self.part_sign("verb", verdict.second),
            self.part_sign("outcome", verdict.outcome),
        )
        composite = math.prod(parts) * (-1) ** flips
        if composite:
            return float(composite)
        # Undecided by the signs: the word weights, squashed between the two signs' ratings.
        bow = sum(self.weights.get(w, 0.0) for w in sorted(set(verdict.words)))
        return 0.5 * math.tanh(bow)

    def ratings(self, doc: Text, verdicts: dict[int, Verdict]) -> Ratings:
        return {k: self.rate(v) for k, v in verdicts.items()}


def labelled_verdicts(documents: Sequence[tuple[Document, Text]]) -> list[tuple[Verdict, bool]]:
    """(verdict, does it stand) of every statement of a contested fact, from the annotations."""
    out = []
    for document, doc in documents:
        found = verdicts_of(doc)
        for group in labelled_groups(document, doc):
            out += [(found[i], true) for i, true in group if i in found]
    return out


def fit_lexicon(documents: Sequence[tuple[Document, Text]], min_count: int = 5) -> LexiconRater:
    """`LexiconRater` from `train` documents and their annotations."""
    labelled = labelled_verdicts(documents)
    counts: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
    for verdict, stands in labelled:
        counts[stands].update(set(verdict.words))
    n_true = sum(1 for _, s in labelled if s) + 1
    n_false = len(labelled) - n_true + 2
    weights = {}
    for word in counts[True] | counts[False]:
        a, b = counts[True][word], counts[False][word]
        if a + b >= min_count:
            odds = math.log((a + 0.5) / n_true) - math.log((b + 0.5) / n_false)
            weights[word] = max(-3.0, min(3.0, odds))
    rater = LexiconRater(weights=weights)
    if labelled:
        triples, verbs, outcomes = part_index([v for v, _ in labelled])
        labels = np.array([s for _, s in labelled])
        v, o = fit_signs(triples, (len(verbs), len(outcomes)), labels=labels)
        for slot, words, signs in (("verb", verbs, v), ("outcome", outcomes, o)):
            for word, sign in zip(words, signs, strict=True):
                rater.signs[slot, word] = int(sign)
                for affix in ("^" + word[:AFFIX], word[-AFFIX:] + "$"):
                    rater.affixes[slot, affix] = rater.affixes.get((slot, affix), 0) + int(sign)
    cued = [sign for (_, word), sign in rater.signs.items() if CORRECTION_CUES.search(word)]
    rater.cue_sign = int(np.sign(sum(cued)))
    agree = {}
    for rater.flips in (True, False):
        agree[rater.flips] = sum((rater.rate(v) > 0) == s for v, s in labelled)
    rater.flips = agree[True] > agree[False]
    return rater


Key = Callable[[Verdict], Hashable]
COUNT_KEYS: dict[str, Key] = {
    "sentence": lambda v: v.sentence,
    "triple": lambda v: v.triple,
    "verbs": lambda v: (v.first, v.second),
    "first verb and outcome": lambda v: (v.first, v.outcome),
    "second verb and outcome": lambda v: (v.second, v.outcome),
}
"""What a counting rule counts in the document: the verdict's exact words or some of its parts."""
ONE_PICK_RULES: tuple[str, ...] = (
    *(f"{end} {key}" for key in COUNT_KEYS for end in ("rarest", "commonest")),
    "one part",
)


@dataclass
class OnePickRater:
    """One decision per document (see the module): a counting rule, or the part that stands."""

    rule: str = "rarest triple"
    name: str = "one-pick"

    def ratings(self, doc: Text, verdicts: dict[int, Verdict]) -> Ratings:
        if self.rule == "one part":
            part = standing_part(statement_groups(doc, verdicts), verdicts)
            return {k: float(part(v)) for k, v in verdicts.items()}
        end, key_name = self.rule.split(" ", 1)
        key = COUNT_KEYS[key_name]
        counts = Counter(key(v) for v in verdicts.values())
        sign = -1.0 if end == "rarest" else 1.0
        return {k: sign * counts[key(v)] for k, v in verdicts.items()}


def standing_part(
    groups: list[list[int]], verdicts: dict[int, Verdict]
) -> Callable[[Verdict], bool]:
    """The document's one decision for the "one part" rule: the part (a verb in either place, or
    an outcome), present or absent, that exactly one statement of the most groups has."""
    by_part: dict[tuple[bool, str], int] = defaultdict(int)
    parts = {p for v in verdicts.values() for p in v.triple}
    for group in groups:
        held = Counter(p for i in group for p in set(verdicts[i].triple))
        for p in parts:
            by_part[True, p] += held[p] == 1
            by_part[False, p] += len(group) - held[p] == 1
    if not by_part:
        return lambda v: False
    present, part = max(sorted(by_part), key=lambda k: by_part[k])
    return lambda v: (part in v.triple) == present


def document_picks(ratings: Ratings, document: Document, doc: Text) -> tuple[float, int]:
    """(facts whose true statement is rated highest among the fact's statements, ties shared
    evenly; facts) of one document, the facts told apart by the annotations: a check after the
    fact, with a grouping no attack has. One in six is chance."""
    total, n = 0.0, 0
    for group in labelled_groups(document, doc):
        rated = [(ratings[i], true) for i, true in group if i in ratings]
        if rated:
            top = max(r for r, _ in rated)
            winners = [true for r, true in rated if r == top]
            total += sum(winners) / len(winners)
            n += 1
    return total, n


def pick_share(rater: Rater, documents: Sequence[tuple[Document, Text]]) -> float:
    """`document_picks` over ``documents``: the share of facts whose truth the rater picks."""
    picks = [
        document_picks(rater.ratings(doc, verdicts_of(doc)), document, doc)
        for document, doc in documents
    ]
    return sum(p for p, _ in picks) / max(1, sum(n for _, n in picks))


def fit_one_pick(documents: Sequence[tuple[Document, Text]]) -> tuple[OnePickRater, dict]:
    """The one-pick rule that picks the truth most often on `train` documents, and every rule's
    share there."""
    shares = {rule: pick_share(OnePickRater(rule), documents) for rule in ONE_PICK_RULES}
    best = max(ONE_PICK_RULES, key=lambda r: shares[r])
    return OnePickRater(best), shares


class VerdictSolver(KeywordSolver):
    """The keyword solver, answering one-off questions from the best-rated statement.

    With ``relation_first`` the statements the keyword score rates above 0 (those that read as
    the asked relation) come first, then the rating: that narrows the candidates when the
    ratings carry little, and drops the truth when the ratings are right but the keyword score
    misjudges it, so each attack takes the variant that scores higher for it."""

    def __init__(self, model: WordWeights, rater: Rater, relation_first: bool = True) -> None:
        super().__init__(model)
        self.rater = rater
        self.relation_first = relation_first
        self._ratings: WeakKeyDictionary[Text, Ratings] = WeakKeyDictionary()

    def ratings(self, doc: Text) -> Ratings:
        found = self._ratings.get(doc)
        if found is None:
            found = self._ratings[doc] = self.rater.ratings(doc, verdicts_of(doc))
        return found

    def hop(self, doc: Text, cls: str, name: str, kind: str) -> str | None:
        """Among the statements about `name` that a verdict follows and that hold a candidate of
        `kind`, the best-rated one's candidate, the keyword score breaking ties; the keyword
        solver's answer when a verdict follows none, and always for residence and ownership
        (they have no verdicts)."""
        if cls.split(":")[-1] in _CHANGING:
            return super().hop(doc, cls, name, kind)
        ratings, model_cls = self.ratings(doc), self._cls(cls)
        rated = [
            (self.model.score(model_cls, s), i, found)
            for i, s, found in doc.hits(name, kind)
            if i in ratings
        ]
        if not rated:
            return super().hop(doc, cls, name, kind)
        first = self.relation_first
        _, _, found = max(rated, key=lambda x: (first and x[0] > 0, ratings[x[1]], x[0]))
        return found[-1] if kind == "year" else found[0]
