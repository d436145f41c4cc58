"""A code-only attack on the retracted statements: how often the sentence after a statement recurs.

Every one-off fact (birth, mentor, maker, founding, seat) is followed by a dismissed doubt and
comes with five retracted false statements, each followed by a retraction. Both kinds of
follower are stock sentences of the split's grammar; under `fathom-docs-5`, whose tables held as
many retraction wordings as dismissal wordings, each retraction wording recurred four or five
times as often as each dismissal wording inside one document. (Since `fathom-docs-6` every
wording of a document recurs equally often, since `fathom-docs-7` exactly once per fact, and
this attack falls to chance; it stays in the audit to keep it so.)
It needs no word list: it counts the exact repeats of nameless, digit-free sentences in the
document, splits their log counts in two (2-means), and favours a candidate statement whose next
sentence is a rare stock sentence over one whose next sentence is a frequent one. Everything
else is the keyword solver (word weights learned on `train`); the one weight of its own,
`FOLLOWER_WEIGHT`, was set on `train`. Nothing of the evaluated split but its text is read.

Run: `uv run python -m envtools.policies.fathom.follower_frequency --split heldout
--doc-tokens 16000` (learning on `train` at the same length).
"""

from __future__ import annotations

import math
import re
from collections import Counter

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS

from envtools import cli
from envtools.policies.fathom.keyword_solver import (
    KeywordSolver,
    Text,
    WordWeights,
    learn,
    solve_split,
    split_pairs,
)

MIN_REPEATS = 3
"""A stock sentence occurs at least this often, word for word, in the document."""
TOP_SHARE = 0.1
"""...and at least this share of the most repeated one's count (drops repeated filler)."""
FOLLOWER_WEIGHT = 20.0
"""Score added per unit of log count a follower lies below the two clusters' midpoint."""

_NAMED_OR_DATED = re.compile(r"[A-Z0-9]")


def stock_sentences(doc: Text) -> dict[str, int]:
    """The nameless, digit-free sentences of `doc` that recur word for word, with their counts:
    the candidates for a stock follower (the group-constraint attack starts from them too)."""
    counts = Counter(sentence for _, sentence in doc.sentences)
    return {
        s: n for s, n in counts.items() if n >= MIN_REPEATS and not _NAMED_OR_DATED.search(s[1:])
    }


class FollowerCounts:
    """The stock sentences of one document and the midpoint between their two count clusters."""

    def __init__(self, doc: Text) -> None:
        stock = stock_sentences(doc)
        top = max(stock.values(), default=0)
        self.log_count = {s: math.log(n) for s, n in stock.items() if n >= TOP_SHARE * top}
        self.midpoint = _two_means_midpoint(sorted(self.log_count.values()))


def _two_means_midpoint(xs: list[float]) -> float | None:
    """The midpoint between the two cluster means of 1-D values `xs` (sorted), or None."""
    if len(xs) < 2 or xs[0] == xs[-1]:
        return None
    low, high = xs[0], xs[-1]
    for _ in range(50):
        mid = (low + high) / 2
        below = [x for x in xs if x <= mid]
        above = [x for x in xs if x > mid]
        low, high = sum(below) / len(below), sum(above) / len(above)
    return (low + high) / 2


class FollowerFrequencySolver(KeywordSolver):
    """The keyword solver, plus a bonus for statements whose next sentence is a rare stock one."""

    def __init__(self, model: WordWeights) -> None:
        super().__init__(model)
        self._counts: dict[int, FollowerCounts] = {}

    def score(self, doc: Text, cls: str, i: int) -> float:
        total = super().score(doc, cls, i)
        counts = self._counts.get(id(doc))
        if counts is None:
            counts = self._counts[id(doc)] = FollowerCounts(doc)
        following = doc.next_in_paragraph(i)
        if counts.midpoint is not None and following in counts.log_count:
            total += FOLLOWER_WEIGHT * (counts.midpoint - counts.log_count[following])
        return total


def accuracy_by_family(
    split: str = "heldout", doc_tokens: int = 200_000, limit: int | None = None
) -> dict[str, float]:
    """Learn on `train` at `doc_tokens`, then mean correctness per family over `split`."""
    solver = FollowerFrequencySolver(learn(split_pairs("train", doc_tokens)))
    return solve_split(solver, split, doc_tokens, limit)


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.policies.fathom.follower_frequency",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--split", default="heldout", choices=("train", "eval", "heldout"))
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=200_000)
    return parser


if __name__ == "__main__":
    import json

    args = build_parser().parse_args()
    print(json.dumps(accuracy_by_family(args.split, args.doc_tokens), indent=1))
