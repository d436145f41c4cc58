"""The verdict after each statement of a one-off fact: does the statement stand?

Every statement of a relation held once (birth, teacher, maker, founding, seat), the true one
and each retracted false one, is followed in its paragraph by a verdict of its own, composed
afresh from the split's parts (verdict_tables.py): ``{who} {verb} {what}.``. It lets the
statement stand when the signs of who, verb and what multiply to a plus; the draw picks who and
what at random (a source or nobody; the statement or a doubt against it) and then the verb that
makes the product come out right.

Why per statement, and why three signs:

* Nothing is shared between facts. Were a document's verdicts a few stock sentences used for
  every fact, one decision about which of them says "this stands" would answer every one-off
  question at once; a fresh verdict settles one statement.
* No part's sign says the verdict's. Each class takes every source and every claim or doubt
  equally often (half of each class is negated, half names a doubt), so counting negations or
  words of error is at chance; and each (who, what), (who, verb) or (verb, what) pair occurs
  in both classes alike, so only the whole triple tells, and a split has thousands of triples.
* The verbs of a split are its own single words (no other split has them), so a lexicon of
  verb signs learned on `train` knows none of `heldout`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from .grammar import SPLITS, deal
from .verdict_tables import BACKING, CLAIMS, DOUBTS, NOBODIES, REJECTING, SOURCES


@dataclass(frozen=True)
class VerdictParts:
    """One split's verdict parts, by sign."""

    sources: tuple[str, ...]
    nobodies: tuple[str, ...]
    backing: tuple[str, ...]
    rejecting: tuple[str, ...]
    claims: tuple[str, ...]
    doubts: tuple[str, ...]


@cache
def verdict_parts(split: str) -> VerdictParts:
    """The verdict parts dealt to ``split``."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}")
    return VerdictParts(
        *(deal(t, split) for t in (SOURCES, NOBODIES, BACKING, REJECTING, CLAIMS, DOUBTS))
    )


def draw_verdict(rnd: Callable[[], float], parts: VerdictParts, stands: bool) -> str:
    """A fresh verdict that lets the statement before it stand exactly when ``stands``."""
    nobody = rnd() < 0.5
    doubt = rnd() < 0.5
    backs = stands != (nobody != doubt)  # (+1 or -1 for each part) multiplies to the verdict
    who = parts.nobodies if nobody else parts.sources
    verb = parts.backing if backs else parts.rejecting
    what = parts.doubts if doubt else parts.claims
    pick = [seq[int(rnd() * len(seq))] for seq in (who, verb, what)]
    return f"{pick[0]} {pick[1]} {pick[2]}."
