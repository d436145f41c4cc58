"""A code-only tell on the one-off facts: where their statements sit in their chapters.

A red-team pass on `fathom-docs-7` found it. A chapter kept its needles in story order and
shuffled every other unit in at random, retracted statements included. A one-off event is told
at a time drawn between someone's arrival in the story and its end, so a true statement tended
to sit after the chapter's other needles, later in its chapter than the retracted statements
about the same fact. Since `fathom-docs-8` the true statement of a one-off fact goes anywhere in
its chapter, as its retracted ones do (render.py).

Per fact this takes the position of each of its statements within its chapter (0 at the chapter
heading, 1 at its end) and picks the statement that sits latest (or earliest: the direction is
the one that does better on `train`). The facts are grouped by the generator's annotations, a
grouping better than any code has, so the pick share is an upper bound on what the tell gives
an attack. The check is also the gap between the true statement's position and the mean of its
retracted ones' (with its standard error over facts): 0 when position carries nothing.

Run: `uv run python -m fathom_lab.audit.position_tell --doc-tokens 16000`: the share of
facts whose true statement it picks, on `train` and on held-out (one in six is chance), and the
gap.
"""

from __future__ import annotations

import bisect
import re

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS

from envtools import cli
from fathom_lab.audit.keyword_solver import Text
from fathom_lab.audit.verdict_text import documents, labelled_groups

_HEADING = re.compile(r"^Chapter \d+:", re.M)


def positions(doc: Text) -> list[float]:
    """Each sentence's position within its chapter, from 0 at the heading to 1 at the end."""
    starts = [m.start() for m in _HEADING.finditer(doc.text)] or [0]
    ends = [*starts[1:], len(doc.text)]
    out = []
    for at, _ in doc.sentences:
        c = max(0, bisect.bisect_right(starts, at) - 1)
        out.append((at - starts[c]) / max(1, ends[c] - starts[c]))
    return out


def position_gap(split: str, doc_tokens: int, docs: int) -> dict[str, float]:
    """Over the one-off facts of ``docs`` documents of ``split``: the share whose true statement
    each direction picks ("latest", "earliest"; ties shared), and the mean gap between the true
    statement's position and its retracted ones' ("gap", with its standard error "se")."""
    picked = {1: 0.0, -1: 0.0}
    gaps: list[float] = []
    for document, doc in documents(split, docs, doc_tokens):
        where = positions(doc)
        for group in labelled_groups(document, doc):
            spots = [(where[i], true) for i, true in group]
            for sign in picked:
                top = max(sign * p for p, _ in spots)
                winners = [true for p, true in spots if sign * p == top]
                picked[sign] += sum(winners) / len(winners)
            truth = next(p for p, true in spots if true)
            others = [p for p, true in spots if not true]
            gaps.append(truth - sum(others) / len(others))
    n = max(1, len(gaps))
    gap = sum(gaps) / n
    se = (sum((g - gap) ** 2 for g in gaps) / n) ** 0.5 / n**0.5
    return {
        "facts": len(gaps),
        "latest": picked[1] / n,
        "earliest": picked[-1] / n,
        "gap": gap,
        "se": se,
    }


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m fathom_lab.audit.position_tell", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=16_000)
    parser.add_argument("--docs", type=cli.integer(1), default=200, help="documents per split")
    return parser


if __name__ == "__main__":
    import json

    args = build_parser().parse_args()
    train = position_gap("train", args.doc_tokens, args.docs)
    direction = max(("latest", "earliest"), key=lambda k: train[k])
    heldout = position_gap("heldout", args.doc_tokens, args.docs)
    rounded = {k: round(v, 4) for k, v in heldout.items()}
    print(json.dumps({"direction chosen on train": direction, "train": round(train[direction], 4)}))
    print(json.dumps({"heldout": round(heldout[direction], 4), **rounded}))
