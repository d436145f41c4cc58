"""Train / eval / held-out question sets with disjoint document seeds.

Each split owns its own seed range, so no document (and no question about it) can appear in two
splits. Seeds are computable without generating anything (:func:`split_seeds`). The held-out split
is built only by ``build_split("heldout")``; nothing else in the package touches its seeds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Literal

from .document import Document, get_document
from .seeds import SEEDS_PER_SPLIT, SPLIT_SEED_BASE, split_of_seed
from .tasks import Task, TaskRecord, task_objects

Split = Literal["train", "eval", "heldout"]
SPLIT_SIZES: dict[str, int] = {"train": 1000, "eval": 200, "heldout": 500}
QUESTIONS_PER_DOCUMENT = 10

__all__ = [
    "QUESTIONS_PER_DOCUMENT",
    "SEEDS_PER_SPLIT",
    "SPLIT_SEED_BASE",
    "SPLIT_SIZES",
    "Split",
    "build_split",
    "split_of_seed",
    "split_seeds",
    "split_tasks",
]


def split_seeds(
    split: Split, n: int | None = None, questions_per_document: int = QUESTIONS_PER_DOCUMENT
) -> list[int]:
    """Document seeds a split of ``n`` questions draws from, in order (no generation)."""
    if split not in SPLIT_SIZES:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(SPLIT_SIZES)}")
    if questions_per_document < 1:
        raise ValueError("questions_per_document must be >= 1")
    n = SPLIT_SIZES[split] if n is None else n
    count = math.ceil(n / questions_per_document)
    if count > SEEDS_PER_SPLIT:
        raise ValueError("split too large for its seed range")
    base = SPLIT_SEED_BASE[split]
    return [base + i for i in range(count)]


def split_tasks(
    split: Split,
    n: int | None = None,
    *,
    doc_tokens: int = 200_000,
    family_mix: Mapping[str, float] | None = None,
    questions_per_document: int = QUESTIONS_PER_DOCUMENT,
) -> Iterator[tuple[Document, Task]]:
    """The first ``n`` (document, :class:`Task`) pairs of a split, in row order (what
    :func:`build_split` turns into rows). Documents come from the LRU cache and are not kept."""
    n = SPLIT_SIZES[split] if n is None else n
    seeds = split_seeds(split, n, questions_per_document)
    base = SPLIT_SEED_BASE[split]
    next_seed = seeds[-1] + 1 if seeds else base
    queue = list(seeds)
    produced = 0
    while produced < n:
        if not queue:
            # A document gave fewer questions than asked (tiny documents): take the next seed
            # of this split's own range.
            if next_seed >= base + SEEDS_PER_SPLIT:
                raise RuntimeError("seed range exhausted")
            queue.append(next_seed)
            next_seed += 1
        seed = queue.pop(0)
        doc = get_document(seed, doc_tokens)
        for task in task_objects(doc, questions_per_document, family_mix, rng_seed=seed):
            if produced == n:
                return
            produced += 1
            yield doc, task


def build_split(
    split: Split,
    n: int | None = None,
    *,
    doc_tokens: int = 200_000,
    family_mix: Mapping[str, float] | None = None,
    questions_per_document: int = QUESTIONS_PER_DOCUMENT,
) -> list[TaskRecord]:
    """``n`` question records (default: the split's standard size) of small fields.

    Records carry ``seed`` and ``doc_tokens``; the document itself is regenerated on demand with
    :func:`get_document` and never stored in a record. The records of a smaller ``n`` are the first
    ``n`` rows of a larger one: every document always yields its full set of questions.
    """
    pairs = split_tasks(
        split,
        n,
        doc_tokens=doc_tokens,
        family_mix=family_mix,
        questions_per_document=questions_per_document,
    )
    return [task.record(doc) for doc, task in pairs]
