"""Which split a document seed belongs to, computable without generating anything.

Each split owns a range of document seeds; the ranges never overlap, so no document (and no
question about it) is in two splits. Split-disjoint surface forms (question wordings, and the
renderer's sentence shapes) are chosen from :func:`split_of_seed`.
"""

from __future__ import annotations

SPLIT_SEED_BASE: dict[str, int] = {"train": 1_000_000, "eval": 2_000_000, "heldout": 3_000_000}
SEEDS_PER_SPLIT = 1_000_000  # width of each range; ranges never overlap


def split_of_seed(seed: int) -> str | None:
    """ "train", "eval" or "heldout" for a seed in that split's range, else None (a seed used by
    tests or benchmarks outside the splits, which may use every surface form)."""
    for split, base in SPLIT_SEED_BASE.items():
        if base <= seed < base + SEEDS_PER_SPLIT:
            return split
    return None
