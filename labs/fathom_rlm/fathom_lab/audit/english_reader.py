"""Attack (f) ``english-reader``: the verdicts read as the English they are, what English leaves
open found by the grouped sign search.

A verdict, ``{who} {verb1} {what}; {then}, {court} {verb2} {outcome}.``, says in plain English
whether the statement before it stands. Read word by word, it stands when

    neg(who) * sign(verb1) * sign(what) * neg(court) * sign(verb2) * sign(outcome) > 0,

where a verb is +1 if it backs what it acts on ("upheld") and -1 if it rejects it ("quashed"),
the first clause's object is +1 for the record ("the entry") and -1 for an attack on it ("the
doubts about it"), the outcome is +1 for a ruling ("the decree") and -1 for a challenge ("the
appeal"), and a negated subject ("Not one of the elders") is -1. On `train` a negated subject
always comes with an attack as the object, so a document where fewer than a quarter of the
verdicts read otherwise is taken to follow that pairing (`frame_signs`).

The signs come from general English, nothing fitted to any split's labels:

* the hand-written lists of `english_lists.py` (general English and `train` verdicts only, with
  no table of the generator and no held-out text) sign most verbs and outcomes, and the search
  keeps those signs (with `EnglishReader.overrule` they are anchors a document may overrule);
* a word the lists do not sign gets a weak hint: its sentiment (`english_signs.english_sign`,
  VADER) and its shape ("re-" on a listed verb keeps the verb's sign, "dis-" or "un-" turns it;
  a noun made from a listed verb takes its sign);
* per document, `verdict_attacks.solve_exactly_one` finds the remaining signs under which each
  fact has one standing statement, against the hints and an even split of backing and
  rejecting verbs and of rulings and challenges (as on `train`). The facts are grouped from the
  text by `statement_groups` (`verdict_text.py`), with `teacher_subject` for sentences whose
  grammatical subject is the teacher; a group that joined two facts wants two standing
  statements, one smaller than a fact at most one.

Its few weights (a hint's, the even split's) were set on `train` documents. Where it stands is
measured by `verdict_audit.py`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from fathom_lab.audit import english_lists as lists
from fathom_lab.audit.english_signs import english_sign
from fathom_lab.audit.keyword_solver import Text
from fathom_lab.audit.verdict_attacks import Ratings, part_index, solve_exactly_one
from fathom_lab.audit.verdict_text import Verdict, statement_groups

# Prefixes that keep a listed verb's sign ("reaffirmed") and that turn it ("disallowed").
_KEEPING_PREFIXES = ("re", "co", "out", "over", "under", "up")
_TURNING_PREFIXES = ("dis", "un", "mis", "de", "counter", "non", "in")
# Endings that make a noun of a verb ("refutation" / refute), tried in this order.
_NOUN_SUFFIXES = (
    "ation", "ition", "ution", "tion", "sion", "ment", "ance", "ence", "ure", "ing", "al", "ity",
    "age", "y",
)  # fmt: skip
# British and American spellings ("favour" / "favor", "recognise" / "recognize").
_SPELLINGS = (
    ("our", "or"), ("or", "our"), ("ise", "ize"), ("ize", "ise"), ("is", "iz"), ("iz", "is"),
)  # fmt: skip
STATEMENTS_PER_FACT = 6
"""A contested fact's statements on `train`: its true one and five retracted ones."""
NEGATIVE_FRAMES = 0.25
"""The share of a document's verdicts read with a negative frame below which they are taken as
misreadings of the `train` pairing (a negated subject with an attack as the object)."""


def lemmas(word: str) -> list[str]:
    """The word, the base forms its past tense may come from ("denied" -> "deny", "upheld" ->
    "uphold", "vetted" -> "vet"), and their British or American spellings."""
    w = word.lower()
    out = [w]
    if w in lists.IRREGULAR_PAST:
        out.append(lists.IRREGULAR_PAST[w])
    if w.endswith("ied"):
        out.append(w[:-3] + "y")
    if w.endswith("ed"):
        out += [w[:-2], w[:-1]]
        stem = w[:-2]
        if len(stem) > 2 and stem[-1] == stem[-2]:
            out.append(stem[:-1])
    elif w.endswith("d"):
        out.append(w[:-1])
    spelled = [x.replace(a, b) for x in out for a, b in _SPELLINGS if a in x]
    return list(dict.fromkeys(out + spelled))


def sentiment(word: str) -> int:
    """The sentiment lexicon's sign of the word or of the first of its `lemmas` it rates."""
    return next((s for x in lemmas(word) if (s := english_sign(x))), 0)


@dataclass(frozen=True)
class EnglishSigns:
    """What the word lists say of a verb's or an outcome's sign, less the words ``forget``
    names (and their lemmas): words to treat as unseen, to check the search finds them."""

    forget: frozenset[str] = frozenset()

    @cached_property
    def _lists(self) -> tuple[frozenset[str], ...]:
        gone = {x for w in self.forget for x in lemmas(w)}
        named = (lists.APPROVE_VERBS, lists.REJECT_VERBS, lists.RULING_NOUNS, lists.CHALLENGE_NOUNS)
        return tuple(frozenset(words - gone) for words in named)

    def _base(self, word: str) -> int:
        approve, reject = self._lists[:2]
        a, r = word in approve, word in reject
        return (1 if a else -1) if a != r else 0

    def verb(self, word: str) -> int:
        """+1 for a verb the lists have as backing, -1 as rejecting, 0 for neither or both."""
        if word in self.forget:
            return 0
        return next((s for x in lemmas(word) if (s := self._base(x))), 0)

    def outcome(self, word: str) -> int:
        """+1 for an outcome the lists have as a ruling, -1 as a challenge, 0 otherwise; a
        plural is read as its singular."""
        if word in self.forget:
            return 0
        ruling, challenge = self._lists[2:]
        a, r = word in ruling, word in challenge
        if a != r:
            return 1 if a else -1
        if word.endswith("s") and not word.endswith("ss"):
            return self.outcome(word[:-1])
        return 0

    def verb_hint(self, word: str) -> float:
        """A weak sign for a verb: its sentiment, and its prefix on a listed verb."""
        hint = float(sentiment(word))
        for x in lemmas(word):
            for prefixes, turn in ((_KEEPING_PREFIXES, 1), (_TURNING_PREFIXES, -1)):
                for prefix in prefixes:
                    if x.startswith(prefix) and len(x) > len(prefix) + 3:
                        hint += 0.5 * turn * self._base(x[len(prefix) :])
            if x.startswith(("dis", "mis", "counter", "de")):
                hint -= 0.2
        return hint

    def outcome_hint(self, word: str) -> float:
        """A weak sign for an outcome: its sentiment, a prefix of opposition ("counter-",
        "dis-"), and the sign of the listed verb it is made from ("confirmation")."""
        w = word.lower()
        hint = float(sentiment(w))
        if w.startswith(("counter", "dis", "mis", "cross", "re")):
            hint -= 0.2 if w.startswith("re") else 0.4
        for suffix in _NOUN_SUFFIXES:
            if not w.endswith(suffix) or len(w) - len(suffix) < 4:
                continue
            stem = w[: len(w) - len(suffix)]
            undoubled = stem[:-1] if len(stem) > 4 and stem[-1] == stem[-2] else stem
            for candidate in dict.fromkeys((stem, stem + "e", stem + "y", undoubled)):
                sign = self._base(candidate) or self._stem_sign(stem)
                if sign:
                    return hint + 0.6 * sign
        return hint

    def _stem_sign(self, stem: str) -> int:
        """The majority sign of the listed verbs the noun stem is cut from ("refut" / refute)."""
        approve, reject = self._lists[:2]
        votes = sum(
            1 if v in approve else -1
            for v in approve | reject
            if len(v) >= 5
            and (v.startswith(stem) or stem.startswith(v[:-1]))
            and abs(len(v) - len(stem)) <= 2
        )
        return int(np.sign(votes))


def clauses(verdict: Verdict) -> tuple[str, str, str]:
    """The first clause's subject and object (the words before and after its verb) and the
    second clause's subject (the court, after the adverbial)."""
    first, second = verdict.sentence.split(";", 1)
    words = first.split()
    at = next(
        (i for i, w in enumerate(words) if re.sub(r"[^a-z']", "", w.lower()) == verdict.first),
        None,
    )
    subject = " ".join(words[:at]) if at is not None else first
    obj = " ".join(words[at + 1 :]) if at is not None else ""
    court = second.rsplit(f" {verdict.second} the ", 1)[0]
    court = court.split(", ", 1)[1] if ", " in court else court
    return subject, obj, court


def frame_sign(verdict: Verdict) -> int:
    """The sign of a verdict's words other than its verbs and outcome: a negated subject in
    either clause, and an object that attacks the statement rather than recording it."""
    subject, obj, court = clauses(verdict)
    negated = -1 if lists.NEGATOR.search(subject) else 1
    if lists.CHALLENGE_OBJECT.search(obj.lower()):
        first = -negated
    elif lists.RECORD_OBJECT.search(obj.lower()):
        first = negated
    else:
        first = 1  # an object the lists do not know: the negation and the object agree
    return first * (-1 if lists.NEGATOR.search(court) else 1)


def frame_signs(verdicts: Sequence[Verdict]) -> np.ndarray:
    """`frame_sign` of each of a document's verdicts, all +1 where fewer than
    `NEGATIVE_FRAMES` of them read negative (the `train` pairing, the rest misread)."""
    frames = np.array([frame_sign(v) for v in verdicts], dtype=np.int64)
    return frames if (frames < 0).mean() >= NEGATIVE_FRAMES else np.ones_like(frames)


def teacher_subject(sentence: str, people: list[tuple[int, str]]) -> str | None:
    """The pupil of a sentence whose grammatical subject is the teacher ("Master Ulm took Ada
    Vey on as a pupil", "Master Ulm instructed Ada Vey"): the first person named after the
    teaching words; None for other sentences (`verdict_text.statement_subjects`)."""
    taught = lists.TEACHER_FIRST.search(sentence)
    if taught is None or lists.PUPIL_FIRST.search(sentence):
        return None
    return next((name for at, name in people if at >= taught.start()), None)


@dataclass
class EnglishReader:
    """The verdicts read with the word lists, the rest found per document (see the module)."""

    forget: frozenset[str] = frozenset()
    """Words the lists are made to forget (for checks on `train`; empty in the audit)."""
    overrule: float | None = None
    """None: the search keeps the listed signs. A number: what overruling a listed sign costs
    (times `agree` or `disagree` where the word's hint agrees with the list or not), so that a
    document whose groups contradict a listed word flips it."""
    agree: float = 1.8
    disagree: float = 0.6
    hint: float = 0.5
    """What signing an unlisted word against its hint costs, per unit of hint."""
    balance: float = 0.1
    """What each sign by which a document's backing and rejecting verbs (or its rulings and
    challenges) differ in number costs: on `train` they are as many."""
    steps: int = 6000
    restarts: int = 8
    seed: int = 0
    name: str = "english-reader"

    @cached_property
    def signs(self) -> EnglishSigns:
        return EnglishSigns(frozenset(self.forget))

    def listed(self, verbs: Sequence[str], outcomes: Sequence[str]) -> np.ndarray:
        """The lists' sign of each verb, then of each outcome (0 for a word they do not sign)."""
        return np.array(
            [self.signs.verb(w) for w in verbs] + [self.signs.outcome(w) for w in outcomes],
            dtype=np.int64,
        )

    def preferences(self, verbs: Sequence[str], outcomes: Sequence[str]) -> np.ndarray:
        """A signed weight per verb, then per outcome, for the search's penalty: an unlisted
        word's hint; a listed word's sign as an anchor when the search may overrule it, else 0
        (the search keeps it)."""
        known = self.listed(verbs, outcomes)
        hints = np.array(
            [self.signs.verb_hint(w) for w in verbs]
            + [self.signs.outcome_hint(w) for w in outcomes]
        )
        if self.overrule is None:
            return np.where(known != 0, 0.0, self.hint * hints)
        agreement = np.sign(hints) * known
        factor = np.where(agreement > 0, self.agree, np.where(agreement < 0, self.disagree, 1.0))
        return np.where(known != 0, known * self.overrule * factor, self.hint * hints)

    def ratings(self, doc: Text, verdicts: dict[int, Verdict]) -> Ratings:
        if not verdicts:
            return {}
        keys = list(verdicts)
        found = [verdicts[k] for k in keys]
        triples, verbs, outcomes = part_index(found)
        # Two more parts, fixed at +1 and -1, carry each verdict's frame into the product.
        plus, minus = len(verbs) + len(outcomes), len(verbs) + len(outcomes) + 1
        frames = np.where(frame_signs(found) > 0, plus, minus)
        ids = np.column_stack([triples[:, :2], triples[:, 2] + len(verbs), frames])
        prefer = np.concatenate([self.preferences(verbs, outcomes), [0.0, 0.0]])
        fixed = {plus: 1, minus: -1}
        if self.overrule is None:
            fixed |= {i: int(s) for i, s in enumerate(self.listed(verbs, outcomes)) if s}
        row = {k: r for r, k in enumerate(keys)}
        groups = [g for g in statement_groups(doc, verdicts, teacher_subject) if len(g) > 1]
        if groups:
            rows = np.array([row[k] for g in groups for k in g])
            owner = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
            signs = solve_exactly_one(
                ids[rows],
                owner,
                len(prefer),
                self.steps,
                self.restarts,
                self.seed,
                known=fixed,
                penalty=self._penalty(prefer, len(verbs), len(outcomes)),
                fact_size=STATEMENTS_PER_FACT,
            )
        else:
            signs = np.where(prefer >= 0, 1, -1)
            for part, sign in fixed.items():
                signs[part] = sign
        product = signs[ids].prod(axis=1)
        return {k: float(p) for k, p in zip(keys, product, strict=True)}

    def _penalty(
        self, prefer: np.ndarray, n_verbs: int, n_outcomes: int
    ) -> Callable[[np.ndarray], float]:
        """The search's cost of a sign table besides the groups: each part signed against its
        preference costs the preference's size, and the verbs' and the outcomes' signs cost
        `balance` per sign by which their plus and minus counts differ."""
        weights, preferred = np.abs(prefer), np.sign(prefer)

        def penalty(signs: np.ndarray) -> float:
            verbs, outcomes = signs[:n_verbs], signs[n_verbs : n_verbs + n_outcomes]
            uneven = abs(int(verbs.sum())) + abs(int(outcomes.sum()))
            return float(weights[signs != preferred].sum()) + self.balance * uneven

        return penalty
