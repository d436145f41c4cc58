"""A code-only attack on the follower classes: where their statements sit in their chapters.

A red-team pass on `fathom-docs-7` found it. A chapter kept its needles in story order and
shuffled every other unit in at random, retracted statements included. A one-off event is told
at a time drawn between someone's arrival in the story and its end, so a true statement tended
to sit after the chapter's other needles, later in its chapter than the retracted statements
around it. Each follower class meets every fact once, so the class whose statements sat latest
on average was the true one more often than one time in six. Since `fathom-docs-8` the true
statement of a one-off fact goes anywhere in its chapter, as its retracted ones do (render.py).

Per document this finds the follower classes as the group-constraint attack does
(`group_constraint.FollowerGroups`, from the text alone), takes each class's mean position of its
statements within their chapters (0 at the chapter heading, 1 at its end), and picks the class
with the highest mean (or the lowest: the direction is the one that does better on `train`).
The check after the fact is the gap between the dismissal class's mean and the other classes'
(with its standard error over documents): 0 when position carries nothing.

Run: `uv run python -m envtools.policies.fathom.position_tell --doc-tokens 16000`: the share of
documents whose dismissal class it picks, on `train` and on held-out (one in six is chance),
and the gap.
"""

from __future__ import annotations

import bisect
import re

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS

from envtools import cli
from envtools.policies.fathom.group_constraint import FollowerGroups, labelled_groups
from envtools.policies.fathom.keyword_solver import Text

_HEADING = re.compile(r"^Chapter \d+:", re.M)


def class_positions(doc: Text, groups: FollowerGroups) -> dict[str, float]:
    """Per follower sentence: the mean position in its chapter of the statements it follows."""
    starts = [m.start() for m in _HEADING.finditer(doc.text)] or [0]
    ends = [*starts[1:], len(doc.text)]
    sums: dict[str, list[float]] = {}
    for i, following in groups.follower.items():
        at = doc.sentences[i][0]
        c = max(0, bisect.bisect_right(starts, at) - 1)
        sums.setdefault(following, []).append((at - starts[c]) / max(1, ends[c] - starts[c]))
    return {s: sum(v) / len(v) for s, v in sums.items()}


def _class_means(classes: list[list[str]], positions: dict[str, float]) -> list[float]:
    return [sum(positions.get(s, 0.5) for s in c) / len(c) for c in classes]


def _pick(means: list[float], sign: int) -> int:
    return max(range(len(means)), key=lambda k: (sign * means[k], -k))


def position_gap(split: str, doc_tokens: int, docs: int | None = None) -> dict[str, float]:
    """Over `split` documents: the share whose dismissal class each direction picks ("latest",
    "earliest"), and the mean gap between the dismissal class's mean position and the other
    classes' ("gap", with its standard error "se"). The grammar tables say which class is the
    dismissal, after the fact."""
    picked, gaps = {1: 0, -1: 0}, []
    for doc, groups, right in labelled_groups(split, doc_tokens, docs):
        if right is None:
            continue
        means = _class_means(groups.classes, class_positions(doc, groups))
        for sign in picked:
            picked[sign] += _pick(means, sign) == right
        others = [m for k, m in enumerate(means) if k != right]
        gaps.append(means[right] - sum(others) / len(others))
    n = max(1, len(gaps))
    gap = sum(gaps) / n
    se = (sum((g - gap) ** 2 for g in gaps) / n) ** 0.5 / n**0.5
    return {
        "documents": len(gaps),
        "latest": picked[1] / n,
        "earliest": picked[-1] / n,
        "gap": gap,
        "se": se,
    }


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.policies.fathom.position_tell", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=16_000)
    parser.add_argument("--docs", type=cli.integer(1), default=600, help="documents per split")
    return parser


if __name__ == "__main__":
    import json

    args = build_parser().parse_args()
    train = position_gap("train", args.doc_tokens, args.docs)
    direction = max(("latest", "earliest"), key=lambda k: train[k])
    heldout = position_gap("heldout", args.doc_tokens, args.docs)
    rounded = {k: round(v, 4) for k, v in heldout.items()}
    print(json.dumps({"direction chosen on train": direction, "train": train[direction]}))
    print(json.dumps({"heldout": heldout[direction], **rounded}))
