"""How well can an aggregation count be guessed from what the question shows?

A guesser that sees only the question knows the relation, the town's name (new in every
document), the chapter run (first and last chapter) and the document length. For each choice of
such visible features, rows are grouped into buckets and every row is predicted with the most
common count among the *other* rows of its bucket (leave-one-out; the mode of all other rows when
its bucket has no other row; ties share the credit). The share predicted right is the
cross-validated mode accuracy. With the count drawn uniformly from 1..12 it should sit near 1/12.

Run: ``python -m fathom_lab.audit.predictability --split train``
"""

from __future__ import annotations

import argparse
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence

from fathom_rlm.documents.splits import build_split
from fathom_rlm.documents.tasks.intent import QuestionIntent, parse_question, template_pattern
from fathom_rlm.documents.tasks.record import TaskRecord
from fathom_rlm.documents.tasks.wordings import RELATIONS

Row = tuple[str, QuestionIntent, int, str]  # question, its intent, doc_tokens, gold count
Features = Callable[[str, QuestionIntent, int], Hashable]

FEATURE_SETS: dict[str, Features] = {
    "relation": lambda text, q, tokens: (q.relation, tokens),
    "relation+wording": lambda text, q, tokens: (q.relation, tokens, wording_of(text)),
    "relation+span": lambda text, q, tokens: (q.relation, tokens, _span(q)),
    "relation+span/3+start/15": lambda text, q, tokens: (
        q.relation,
        tokens,
        _span(q) // 3,
        _first(q) // 15,
    ),
    "relation+span+start": lambda text, q, tokens: (q.relation, tokens, _span(q), _first(q)),
}


def wording_of(question: str) -> str:
    """The template that produced ``question``."""
    text = " ".join(question.split())
    for rel in RELATIONS.values():
        for template in rel.templates:
            if template_pattern(template).fullmatch(text):
                return template
    raise ValueError(f"no template produces {question[:80]!r}")


def _span(q: QuestionIntent) -> int:
    assert q.chapters is not None
    return q.chapters[1] - q.chapters[0] + 1


def _first(q: QuestionIntent) -> int:
    assert q.chapters is not None
    return q.chapters[0]


def _credit(counts: Counter, value: str) -> float:
    """Expected accuracy of predicting the mode of ``counts`` (ties broken at random)."""
    if not counts:
        return 0.0
    top = max(counts.values())
    modes = [v for v, c in counts.items() if c == top]
    return 1.0 / len(modes) if value in modes else 0.0


def loo_mode_accuracy(items: Sequence[tuple[Hashable, str]]) -> float:
    """Leave-one-out accuracy of the per-bucket mode over ``(bucket, value)`` items."""
    if not items:
        raise ValueError("no items")
    by_bucket: dict[Hashable, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    for bucket, value in items:
        by_bucket[bucket][value] += 1
        overall[value] += 1
    score = 0.0
    for bucket, value in items:
        rest = by_bucket[bucket].copy()
        rest[value] -= 1
        rest = +rest  # drop zeros
        if not rest:
            rest = overall.copy()
            rest[value] -= 1
            rest = +rest
        score += _credit(rest, value)
    return score / len(items)


def transfer_mode_accuracy(
    fit: Sequence[tuple[Hashable, str]], test: Sequence[tuple[Hashable, str]]
) -> float:
    """Accuracy on ``test`` of the per-bucket mode fitted on ``fit`` (overall mode for a bucket
    never seen in ``fit``)."""
    by_bucket: dict[Hashable, Counter] = defaultdict(Counter)
    overall: Counter = Counter()
    for bucket, value in fit:
        by_bucket[bucket][value] += 1
        overall[value] += 1
    return sum(_credit(by_bucket.get(b) or overall, v) for b, v in test) / len(test)


def count_rows(rows: Sequence[TaskRecord]) -> list[Row]:
    """(question, intent, doc_tokens, gold count) of every aggregation row."""
    return [
        (r.question, parse_question(r.question), r.doc_tokens, r.answer)
        for r in rows
        if r.family == "aggregation"
    ]


def null_quantile(items: Sequence[tuple[Hashable, str]], rounds: int, q: float = 0.95) -> float:
    """The ``q`` quantile of the leave-one-out accuracy after shuffling the values over the
    buckets ``rounds`` times: what chance alone reaches on this many rows."""
    rng = random.Random(0)
    values = [v for _, v in items]
    scores = []
    for _ in range(rounds):
        rng.shuffle(values)
        scores.append(loo_mode_accuracy([(b, v) for (b, _), v in zip(items, values, strict=True)]))
    scores.sort()
    return scores[min(len(scores) - 1, int(q * len(scores)))]


def report(
    train: Sequence[Row], held: Sequence[Row] = (), null_rounds: int = 0
) -> dict[str, dict[str, float]]:
    """Per feature set: leave-one-out mode accuracy on ``train``, the fitted mode's accuracy on
    ``held`` (when given), the largest share of one count in the whole of ``train``, and (with
    ``null_rounds``) the 95% quantile of the leave-one-out accuracy with shuffled counts."""
    out: dict[str, dict[str, float]] = {}
    top_share = max(Counter(v for *_, v in train).values()) / len(train)
    for name, features in FEATURE_SETS.items():
        items = [(features(x, q, t), v) for x, q, t, v in train]
        entry = {"loo": loo_mode_accuracy(items), "top_share": top_share}
        if null_rounds:
            entry["null95"] = null_quantile(items, null_rounds)
        if held:
            entry["transfer"] = transfer_mode_accuracy(
                items, [(features(x, q, t), v) for x, q, t, v in held]
            )
        out[name] = entry
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="train", choices=("train", "eval"))
    parser.add_argument("--n", type=int, default=None, help="rows (default: the split's size)")
    parser.add_argument("--doc-tokens", type=int, default=200_000)
    parser.add_argument(
        "--aggregation-only", action="store_true", help="build only aggregation questions"
    )
    parser.add_argument("--held", default="eval", help="split to test the fitted modes on")
    parser.add_argument("--held-n", type=int, default=None, help="rows of the held split")
    parser.add_argument(
        "--null", type=int, default=0, help="shuffles for the chance level (0: skip)"
    )
    args = parser.parse_args(argv)
    mix = {"aggregation": 1.0} if args.aggregation_only else None
    rows = build_split(args.split, args.n, doc_tokens=args.doc_tokens, family_mix=mix)
    held_rows = build_split(args.held, args.held_n, doc_tokens=args.doc_tokens, family_mix=mix)
    train, held = count_rows(rows), count_rows(held_rows)
    print(f"{args.split}: {len(train)} aggregation rows; {args.held}: {len(held)}")
    print(f"counts: {sorted(Counter(int(v) for *_, v in train).items())}")
    print(
        "| visible features | leave-one-out mode accuracy | chance 95% (shuffled) "
        f"| fitted on train, scored on {args.held} | top share |"
    )
    print("|---|---:|---:|---:|---:|")
    for name, entry in report(train, held, args.null).items():
        cells = [entry.get(k) for k in ("loo", "null95", "transfer", "top_share")]
        shown = " | ".join("-" if c is None else f"{c:.3f}" for c in cells)
        print(f"| {name} | {shown} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
