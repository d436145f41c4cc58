"""What a lexicon learned from `train`'s verdicts knows of another split's.

Every statement of a contested fact is followed by its verdict (``verdicts.py`` in the
generator): ``{who} {verb} {what}; {then}, {court} {verb} {outcome}.``, which lets the statement
stand when the signs of its parts multiply to a plus. Two learners fit on the verdicts of
`train` documents, labelled by the generator's annotations (the only split whose annotations a
learner may read), are scored on the verdicts of another split:

* :class:`NaiveBayes`: a weight per word of the whole sentence (bag of words);
* :class:`SignLexicon`: a sign per part, solved exactly from the labels (each verdict is one
  equation over GF(2): the sign bits of its parts add up to its label), so it is right on every
  `train` verdict it was fit on. A part it never met takes the sign of the `train` part of the
  same slot that shares the most character trigrams with it (a stem or a suffix carries over).

:func:`score` gives a learner's balanced accuracy over verdicts (the mean of its hit rates on
statements that stand and on those that do not; chance 0.5) and its pick-one-of-six accuracy
per fact (the statement whose verdict it rates highest, ties sharing the credit; chance one in
the statements per fact). :func:`sign_counts` counts, per class, each sign-bearing part's sign.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable

from fathom_rlm.documents import Document
from fathom_rlm.documents.grammar import SPLITS

from fathom_lab.ladder.grammar_reader import SENTENCE, compiled_grammar

Group = list[tuple[str, bool]]  # a fact's verdicts with whether each lets its statement stand
SLOTS = ("who", "verb", "what", "verb2", "end")  # the parts whose signs make the product
_WORD = re.compile(r"[a-z']+")


def verdict_groups(doc: Document) -> list[Group]:
    """Per contested fact of ``doc``: the verdict after each of its statements, the true one
    first, from the annotations (a retracted statement's last span is its verdict; the true
    statement's verdict is the sentence right after it)."""

    groups: dict[tuple[str, int, int], Group] = {}
    for key in sorted(doc.world.contested.keys):
        m = SENTENCE.match(doc.text, doc.facts[key].sentence[1] + 1)
        groups[key] = [(m.group() if m else "", True)]
    for d in doc.distractors:
        if d.kind == "retracted":
            assert d.key is not None
            groups[d.key].append((doc.text[slice(*d.spans[-1])], False))
    return list(groups.values())


def verdict_parts_of(sentence: str) -> dict[str, str] | None:
    """The parts of a verdict of any split by slot (``who``, ``verb``, ``what``, ``then``,
    ``court``, ``verb2``, ``end``), or None when ``sentence`` is no verdict."""
    m = compiled_grammar(SPLITS).verdict.fullmatch(sentence)
    return None if m is None else m.groupdict()


def sign_counts(groups: Iterable[Group]) -> Counter[tuple[bool, str, int]]:
    """(stands, slot, sign) -> how many verdicts of that class carry a part of that sign there."""
    signs = compiled_grammar(SPLITS).verdict_signs
    out: Counter[tuple[bool, str, int]] = Counter()
    for group in groups:
        for sentence, stands in group:
            parts = verdict_parts_of(sentence)
            if parts is None:
                raise ValueError(f"not a verdict: {sentence!r}")
            for slot in SLOTS:
                out[stands, slot, signs[parts[slot]]] += 1
    return out


class NaiveBayes:
    """Word weights: log odds of each word (present or not) in verdicts that let their
    statement stand against those that do not, add-one smoothed; no class prior."""

    def __init__(self, groups: Iterable[Group]) -> None:
        seen: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
        n = {True: 0, False: 0}
        for group in groups:
            for sentence, stands in group:
                seen[stands].update(set(_WORD.findall(sentence.lower())))
                n[stands] += 1
        self.weights = {
            w: math.log((seen[True][w] + 1) / (n[True] + 2))
            - math.log((seen[False][w] + 1) / (n[False] + 2))
            for w in seen[True].keys() | seen[False].keys()
        }

    def __call__(self, sentence: str) -> float:
        words = set(_WORD.findall(sentence.lower()))
        return sum(self.weights.get(w, 0.0) for w in words)


def _trigrams(word: str) -> set[str]:
    padded = f"  {word.lower()} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


class SignLexicon:
    """A sign per (slot, part), solved from labelled verdicts over GF(2); see the module doc."""

    def __init__(self, groups: Iterable[Group]) -> None:
        index: dict[tuple[str, str], int] = {}
        pivots: dict[int, tuple[int, int]] = {}  # pivot bit -> (row mask, row value), reduced
        for group in groups:
            for sentence, stands in group:
                mask, value = 0, int(not stands)
                for key in self._keys(sentence):
                    mask ^= 1 << index.setdefault(key, len(index))
                for bit, (row, row_value) in pivots.items():
                    if mask >> bit & 1:
                        mask, value = mask ^ row, value ^ row_value
                if mask == 0:
                    if value:
                        raise ValueError("the labels contradict every sign lexicon")
                    continue
                top = mask.bit_length() - 1
                for bit, (row, row_value) in pivots.items():
                    if row >> top & 1:
                        pivots[bit] = (row ^ mask, row_value ^ value)
                pivots[top] = (mask, value)
        # Fully reduced rows: with every free part at bit 0, a pivot part takes its row's value.
        self.bits = {key: pivots[i][1] if i in pivots else 0 for key, i in index.items()}
        self._by_slot: dict[str, list[tuple[str, set[str]]]] = {}
        for slot, part in self.bits:
            self._by_slot.setdefault(slot, []).append((part, _trigrams(part)))

    @staticmethod
    def _keys(sentence: str) -> list[tuple[str, str]]:
        parts = verdict_parts_of(sentence)
        if parts is None:
            raise ValueError(f"not a verdict: {sentence!r}")
        return [("verb" if slot == "verb2" else slot, parts[slot]) for slot in SLOTS]

    def bit(self, slot: str, part: str) -> int:
        """The learned sign bit (1: minus) of a part; an unknown part takes its nearest known
        part's (most character trigrams in common, relative to all of theirs)."""
        known = self.bits.get((slot, part))
        if known is not None:
            return known
        grams = _trigrams(part)
        nearest = max(
            self._by_slot.get(slot, []),
            key=lambda kg: (len(grams & kg[1]) / len(grams | kg[1]), kg[0]),
            default=None,
        )
        return 0 if nearest is None else self.bits[slot, nearest[0]]

    def __call__(self, sentence: str) -> float:
        bits = sum(self.bit(slot, part) for slot, part in self._keys(sentence))
        return 1.0 if bits % 2 == 0 else -1.0


def score(rate: Callable[[str], float], groups: list[Group]) -> tuple[float, float]:
    """(balanced accuracy over verdicts, pick-one-of-the-group accuracy per fact) of a learner
    that rates how much a verdict lets its statement stand (above 0: it stands)."""
    hits = {True: [0, 0], False: [0, 0]}
    picked = 0.0
    for group in groups:
        rates = [rate(sentence) for sentence, _ in group]
        for r, (_, stands) in zip(rates, group, strict=True):
            hits[stands][0] += (r > 0) == stands
            hits[stands][1] += 1
        best = max(rates)
        tops = [i for i, r in enumerate(rates) if r == best]
        picked += sum(group[i][1] for i in tops) / len(tops)
    balanced = sum(h / max(1, n) for h, n in hits.values()) / 2
    return balanced, picked / max(1, len(groups))
