"""Checked questions about one document, families drawn to a mix."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import replace

from ..document import GENERATOR_VERSION, Document
from ..seeds import SPLIT_SEED_BASE, split_of_seed
from .builder import TaskBuilder
from .core import DEFAULT_FAMILY_MIX, Task, check_task
from .counting import aggregation, comparison, count_max
from .intent import FAMILIES
from .lookup import exact_id, multi_hop, single_hop
from .record import TaskRecord
from .state import temporal

MAJORITY_KEEP = 0.25  # chance of keeping a question whose gold is the most prominent entity
TARGET_TRIES = 200  # run lengths tried for one drawn count before another count is drawn

_PROPOSERS: dict[str, Callable[[TaskBuilder, random.Random], Task | None]] = {
    "exact_id": exact_id,
    "single_hop": single_hop,
    "multi_hop": multi_hop,
    "temporal": temporal,
    "comparison": comparison,
}


def _allocate(n: int, mix: Mapping[str, float], rng: random.Random) -> dict[str, int]:
    """Split n over families: floors of n*share, remainders drawn by share (unbiased on average)."""
    total = sum(mix.values())
    shares = {f: mix[f] / total for f in FAMILIES if mix.get(f, 0) > 0}
    # A share that is a whole number of questions (10 x 0.2) must not lose one to rounding
    # (the shares' sum is not exactly 1 in floating point).
    counts = {f: math.floor(n * s + 1e-9) for f, s in shares.items()}
    rest = n - sum(counts.values())
    fams = list(shares)
    cum, acc = [], 0.0
    for f in fams:
        acc += max(0.0, n * shares[f] - counts[f])
        cum.append(acc)
    for _ in range(rest):
        x = rng.random() * cum[-1]
        i = next(j for j, c in enumerate(cum) if x < c or j == len(cum) - 1)
        counts[fams[i]] += 1
    return counts


def task_objects(
    document: Document,
    n: int,
    families: Mapping[str, float] | None = None,
    rng_seed: int | None = None,
) -> list[Task]:
    """The checked :class:`Task` objects behind :func:`make_tasks` (same order, same draws)."""
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
        shortfall += counts[family] - fill(builder, family, counts[family], rng, tasks, seen)
    # A family that ran dry (tiny documents) hands its quota to the others, in mix order.
    for family in order:
        if shortfall <= 0:
            break
        shortfall -= fill(builder, family, shortfall, rng, tasks, seen)
    rng.shuffle(tasks)
    return tasks


def make_tasks(
    document: Document,
    n: int,
    families: Mapping[str, float] | None = None,
    rng_seed: int | None = None,
) -> list[TaskRecord]:
    """Up to ``n`` checked question records about ``document`` (exactly n unless the document is too
    small to hold them), with families drawn according to ``families`` (name -> weight)."""
    return [t.record(document) for t in task_objects(document, n, families, rng_seed)]


def _first_passing(builder: TaskBuilder, task: Task) -> Task | None:
    for wording in task.wordings:
        cand = replace(task, question=wording)
        reason = check_task(builder.doc, cand, builder.name_words)
        if reason is None:
            return cand
        builder.reject(reason)
    return None


def fill(
    builder: TaskBuilder,
    family: str,
    want: int,
    rng: random.Random,
    out: list[Task],
    seen: set[str],
) -> int:
    """Append up to ``want`` checked tasks of ``family`` to ``out``; return how many."""
    got = 0
    attempts = 0
    limit = 200 * want + 200
    target, tries = 0, 0
    top = count_max(len(builder.doc.text))
    while got < want and attempts < limit:
        attempts += 1
        if family == "aggregation":
            # The count is fixed first and then searched for, so the answer is independent of
            # the chapter run the question shows: dealt from a balanced deck across the
            # split's documents, or drawn uniformly once the dealt count proved absent here.
            if target == 0:
                position = sum(1 for t in out if t.family == family)
                target, tries = balanced_count(builder.doc.seed, position, top), 0
            elif tries >= TARGET_TRIES:
                target, tries = 1 + int(rng.random() * top), 0
            tries += 1
            task = aggregation(builder, rng, target)
        else:
            task = _PROPOSERS[family](builder, rng)
        if task is None:
            continue
        accepted = _first_passing(builder, task)
        if accepted is None or accepted.question in seen:
            continue
        if accepted.answer in builder.prominent and rng.random() > MAJORITY_KEEP:
            # Keep the document's most prominent entity from becoming a free guess.
            builder.reject("majority_answer")
            continue
        seen.add(accepted.question)
        if accepted.plan_item is not None:
            builder.asked.add(accepted.plan_item)
        out.append(accepted)
        got += 1
        target = 0
    return got


def balanced_count(seed: int, position: int, top: int) -> int:
    """The count dealt to the question at ``position`` among a document's questions.

    Each position has its own deck per block of ``top`` consecutive documents of a split: a
    shuffle of 1..top, one card per document. Over a split every count then appears almost
    equally often, instead of the uneven tallies of independent draws on ~150 questions.
    """
    split = split_of_seed(seed)
    index = seed - SPLIT_SEED_BASE[split] if split is not None else seed
    block, card = divmod(index, top)
    deck = list(range(1, top + 1))
    random.Random(f"{GENERATOR_VERSION}:counts:{split}:{position}:{block}").shuffle(deck)
    return deck[card]


def propose_tasks(document: Document, family: str, n: int, rng_seed: int = 0) -> list[Task]:
    """Checked :class:`Task` objects (with evidence detail) of one family; for tests and tools."""
    rng = random.Random(f"{GENERATOR_VERSION}:propose:{document.seed}:{family}:{rng_seed}")
    builder = TaskBuilder(document)
    out: list[Task] = []
    fill(builder, family, n, rng, out, set())
    return out
