"""The sentence after each statement of a relation that has retractions.

A true statement is followed by a dismissed doubt, each retracted false one by a retraction;
both are fixed sentences of the split's grammar. Every one-off fact of a document gets the same
number of retracted statements (``per_fact``, five unless the document is too short to hold
them).

A document draws one dismissal and ``per_fact`` different retractions at random from its
split's twenty of each, and uses them the same way for every fact: the true statement takes the
dismissal, its k-th retracted statement the k-th retraction. So every follower of a document
recurs exactly once per fact, and each meets every fact exactly once; counting cannot tell them
apart. Counting the sentences that hit each fact's statements once finds all ``per_fact + 1``
of them, not which says "this stands": that takes reading the words, and the two tables are
matched so that counting words does not tell either (grammar_tables.py).

Why one wording each and drawn from twenty: with several wordings per kind, the retraction
wordings of a document would split a fixed pool between them and their sums would be tied to
the pool's, so the dismissal wording, drawn alone, would sit nearer the middle of any measure
taken over them all; five retractions out of twenty are nearly independent draws.
"""

from __future__ import annotations

from collections.abc import Callable


def draw_followers(
    rnd: Callable[[], float],
    dismissals: tuple[str, ...],
    retractions: tuple[str, ...],
    per_fact: int,
) -> tuple[str, ...]:
    """One document's followers: index 0 the dismissal, 1 to ``per_fact`` the retractions."""
    if per_fact > len(retractions) or not dismissals:
        raise ValueError(f"{per_fact} retractions per fact need {per_fact} wordings")
    pool = list(retractions)
    for i in range(per_fact):  # a partial shuffle: the first per_fact are a random draw
        j = i + int(rnd() * (len(pool) - i))
        pool[i], pool[j] = pool[j], pool[i]
    return (dismissals[int(rnd() * len(dismissals))], *pool[:per_fact])
