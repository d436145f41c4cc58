"""The verdict after each statement of a one-off fact: does the statement stand?

Every statement of a relation held once (birth, teacher, maker, founding, seat), the true one
and each retracted false one, is followed in its paragraph by a verdict of its own, composed
afresh from its split's parts (verdict_tables.py):
``{who} {verb} {what}; {then}, {court} {verb} {outcome}.`` -- a first ruling on the statement,
then a later authority's word on that ruling. The statement stands when the signs of the first
verb, the second verb and the outcome multiply to a plus. The draw takes the first verb's and
the outcome's signs at random and then the second verb whose sign makes the product right.

Why so:

* Nothing is shared between facts. Were a document's verdicts a few stock sentences used for
  every fact, one decision about which of them says "this stands" would answer every one-off
  question at once; a fresh verdict settles one statement.
* No part says which class a verdict is in. Each sign-bearing part (the two verbs, the
  outcome) is a plus or a minus with even odds in either class, so is each pair of them; only
  the product of all three tells. A document has five false statements per true one, so a part
  whose sign followed the class would give itself away by how often it occurs: "the verb that
  is rare here means the statement stands".
* What code sees of every split alike, negations and words of error, stands in half of each
  class and always in pairs that cancel ("Nobody upheld the charge of a clerical error" is a
  first ruling for the statement, as "The registrar upheld the entry" is).
* The verbs and outcomes of a split are its own single words, so a lexicon learned on `train`
  knows none of `heldout`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from .grammar import SPLITS, deal
from .verdict_tables import VERDICT_TABLES


@dataclass(frozen=True)
class VerdictParts:
    """One split's verdict parts. ``sources`` rule on ``claims``, ``nobodies`` on ``doubts``;
    ``outcomes`` are a first ruling itself, ``challenges`` an attack on it."""

    sources: tuple[str, ...]
    nobodies: tuple[str, ...]
    claims: tuple[str, ...]
    doubts: tuple[str, ...]
    backing: tuple[str, ...]
    rejecting: tuple[str, ...]
    then: tuple[str, ...]
    courts: tuple[str, ...]
    outcomes: tuple[str, ...]
    challenges: tuple[str, ...]


@cache
def verdict_parts(split: str) -> VerdictParts:
    """The verdict parts dealt to ``split``."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}")
    return VerdictParts(*(deal(table, split) for table in VERDICT_TABLES))


def draw_verdict(rnd: Callable[[], float], parts: VerdictParts, stands: bool) -> str:
    """A fresh verdict that lets the statement before it stand exactly when ``stands``."""

    def pick(seq: tuple[str, ...]) -> str:
        return seq[int(rnd() * len(seq))]

    nobody = rnd() < 0.5
    first_backs = rnd() < 0.5
    upheld = rnd() < 0.5  # the outcome is the first ruling itself, not a challenge to it
    second_backs = stands == (first_backs == upheld)  # the three signs multiply to ``stands``
    who, what = (parts.nobodies, parts.doubts) if nobody else (parts.sources, parts.claims)
    verbs = (parts.rejecting, parts.backing)
    first = f"{pick(who)} {pick(verbs[first_backs])} {pick(what)}"
    outcome = pick(parts.outcomes if upheld else parts.challenges)
    second = f"{pick(parts.then)}, {pick(parts.courts)} {pick(verbs[second_backs])} {outcome}"
    return f"{first}; {second}."
