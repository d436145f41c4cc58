"""The sentence after each statement of a relation that has retractions.

A true statement is followed by a dismissed doubt, each retracted false one by a retraction;
both are fixed sentences of the split's grammar. Every one-off fact of a document gets the same
number of retracted statements (``per_fact``, five unless the document is too short to hold
them), so a document deals ``per_fact`` retractions per dismissal. Drawn uniformly from tables of
equal size, a retraction wording would then recur ``per_fact`` times as often as a dismissal
wording, and counting repeats would tell them apart without reading a word. The deck instead
uses ``per_fact`` retraction wordings per dismissal wording and deals each kind least-used
first, so every wording in a document recurs equally often, to within one.
"""

from __future__ import annotations

from collections.abc import Callable


class FollowerDeck:
    """Deals one document's dismissals and retractions from its own random stream."""

    def __init__(
        self,
        rnd: Callable[[], float],
        dismissals: tuple[str, ...],
        retractions: tuple[str, ...],
        per_fact: int,
    ) -> None:
        needed = per_fact * len(dismissals)
        if needed > len(retractions):
            raise ValueError(f"{per_fact} retractions per fact need {needed} wordings")
        self.rnd = rnd
        # Which retraction wordings a document uses varies: a random subset of the split's.
        pool = list(retractions)
        for i in range(len(pool) - 1, 0, -1):
            j = int(rnd() * (i + 1))
            pool[i], pool[j] = pool[j], pool[i]
        self.counts = {
            "dismissal": dict.fromkeys(dismissals, 0),
            "retraction": dict.fromkeys(pool[:needed], 0),
        }

    def deal(self, kind: str) -> str:
        """A least-used wording of ``kind`` ("dismissal" or "retraction"), ties at random."""
        counts = self.counts[kind]
        least = min(counts.values())
        tied = [s for s, n in counts.items() if n == least]
        sentence = tied[int(self.rnd() * len(tied))]
        counts[sentence] += 1
        return sentence
