"""An open attack on `fathom-docs-7`: where a follower class's statements sit in their chapters.

A red-team pass on `fathom-docs-7` found it. A chapter keeps its needles in story order and
shuffles every other unit in at random, retracted statements included. A one-off event is told
at a time drawn between someone's arrival in the story and its end, so a true statement tends to
sit after the chapter's other needles, later in its chapter than the retracted statements around
it. Each follower class meets every fact once, so the class whose statements sit latest on
average is the true one more often than one time in six.

Per document this finds the follower classes as the group-constraint attack does
(`group_constraint.FollowerGroups`, from the text alone), takes each class's mean position of its
statements within their chapters (0 at the chapter heading, 1 at its end), and picks the class
with the highest mean (or the lowest: the direction is the one that does better on `train`).

Run: `uv run python -m envtools.policies.fathom.position_tell --doc-tokens 16000`: the share of
documents whose dismissal class it picks, on `train` and on held-out (one in six is chance).
"""

from __future__ import annotations

import bisect
import re

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


def _pick(classes: list[list[str]], positions: dict[str, float], sign: int) -> int:
    scores = [sign * sum(positions.get(s, 0.5) for s in c) / len(c) for c in classes]
    return max(range(len(classes)), key=lambda k: (scores[k], -k))


def pick_rates(split: str, doc_tokens: int, docs: int | None = None) -> dict[int, float]:
    """Per direction (+1: latest class, -1: earliest), the share of `split` documents whose
    dismissal class it picks (the grammar tables say which it is, after the fact)."""
    hits, n = {1: 0, -1: 0}, 0
    for doc, groups, right in labelled_groups(split, doc_tokens, docs):
        positions = class_positions(doc, groups)
        n += 1
        for sign in hits:
            hits[sign] += right is not None and _pick(groups.classes, positions, sign) == right
    return {sign: h / max(1, n) for sign, h in hits.items()}


if __name__ == "__main__":
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doc-tokens", type=int, default=16_000)
    args = parser.parse_args()
    train = pick_rates("train", args.doc_tokens, 200)
    sign = max(train, key=lambda k: train[k])
    heldout = pick_rates("heldout", args.doc_tokens)
    print(
        json.dumps(
            {
                "direction chosen on train": "latest" if sign > 0 else "earliest",
                "train (200 documents)": train[sign],
                "heldout (50 documents)": heldout[sign],
            }
        )
    )
