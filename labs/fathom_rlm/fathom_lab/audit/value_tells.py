"""A code-only tell on the one-off facts: their years beside the other years of a name.

A red-team pass on the first draft of `fathom-docs-7` found one in the ordinary hard negatives
(negated, rumoured, quoted ... sentences): a false birth year was drawn one to nine years before
the true one, a false founding year one to nine after it, so the statement whose year sat just
after (births) or just before (foundings) the years of the other sentences naming the same
people was the true one (a hand-made rule picked it in 0.91 to 0.98 of held-out documents, this
module's learned rule in 0.76 at 16K tokens). The generator now draws those years from the whole
range and never reuses any of a fact's six values (`distractors.DistractorMaker.stated`).

This is that tell, made general. For every statement of a one-off fact that holds a year and
every other sentence that shares a capitalised name with it and holds a year (no statement a
verdict follows, no verdict), it takes the offset between the two years and sums weights learned
on `train`: the log-odds of each offset beside a true statement against a retracted one, apart
for statements about a thing (an organisation or object) and about a person. Per fact the
statement with the highest sum is picked. The facts are grouped by the generator's annotations,
an upper bound on any grouping code has; only facts told with a year (birth, founding) count.

Run: `uv run python -m fathom_lab.audit.value_tells --doc-tokens 16000`: the share of
facts whose true statement it picks (one in six is chance), on `train` (in-sample) and
held-out.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS

from envtools import cli
from fathom_lab.audit.keyword_solver import YEAR, Text
from fathom_lab.audit.verdict_text import (
    VERDICT_SHAPE,
    documents,
    find_verdicts,
    labelled_groups,
)

MAX_OFFSET = 30
TRAIN_DOCS = 150  # about 1,000 contested facts (seven per document) to learn on
_NAME = re.compile(r"\b[A-Z][a-z]+\b")
_THING = re.compile(r"\b[Tt]he [A-Z][a-z]+ [A-Z][a-z]+")
_NOT_NAMES = frozenset({"The", "He", "She", "It", "Chapter", "Mistress", "Master"})
Offsets = Counter  # (kind, offset) -> count


def _names(sentence: str) -> set[str]:
    return {n for n in _NAME.findall(sentence)[1:] if n not in _NOT_NAMES}


def statement_offsets(doc: Text) -> dict[int, Offsets]:
    """Per statement a verdict follows that holds a year: how often each (kind, year offset)
    occurs between it and another sentence sharing a name with it."""
    statements = find_verdicts(doc)
    by_name: dict[str, list[int]] = defaultdict(list)
    years: dict[int, list[int]] = {}
    for i, (_, sentence) in enumerate(doc.sentences):
        found = [int(y) for y in YEAR.findall(sentence)]
        if found and i not in statements and not VERDICT_SHAPE.fullmatch(sentence):
            years[i] = found
            for name in _names(sentence):
                by_name[name].append(i)
    out: dict[int, Offsets] = {}
    for i in statements:
        sentence = doc.sentences[i][1]
        own = YEAR.findall(sentence)
        if not own:
            continue
        names = _names(sentence)
        if i and re.match(r"(?:She|He|It)\b", sentence):
            names |= _names(doc.sentences[i - 1][1])
        kind = "thing" if _THING.search(sentence) else "person"
        counts: Offsets = Counter()
        for j in {j for name in names for j in by_name.get(name, ())}:
            for year in years[j]:
                offset = year - int(own[-1])
                if abs(offset) <= MAX_OFFSET:
                    counts[kind, offset] += 1
        out[i] = counts
    return out


class ValueRule:
    """Log-odds per (kind, offset) beside a true statement against a retracted one."""

    def __init__(self, true: Offsets, false: Offsets) -> None:
        n_true, n_false = sum(true.values()) + 1, sum(false.values()) + 1
        self.weights = {
            key: math.log((true[key] + 0.5) / n_true) - math.log((false[key] + 0.5) / n_false)
            for key in true | false
        }

    def score(self, offsets: Offsets) -> float:
        return sum(self.weights.get(key, 0.0) * n for key, n in sorted(offsets.items()))


def _facts(split: str, doc_tokens: int, docs: int) -> list[list[tuple[Offsets, bool]]]:
    """Per one-off fact told with a year: (offsets, is true) of each of its statements."""
    out = []
    for document, doc in documents(split, docs, doc_tokens):
        offsets = statement_offsets(doc)
        for group in labelled_groups(document, doc):
            if all(i in offsets for i, _ in group):
                out.append([(offsets[i], true) for i, true in group])
    return out


def learn_rule(doc_tokens: int, docs: int = TRAIN_DOCS) -> ValueRule:
    true, false = Counter(), Counter()
    for fact in _facts("train", doc_tokens, docs):
        for offsets, is_true in fact:
            (true if is_true else false).update(offsets)
    return ValueRule(true, false)


def pick_rate(split: str, doc_tokens: int, rule: ValueRule, docs: int) -> dict[str, float]:
    """Share of the facts of ``docs`` documents of ``split`` whose true statement the rule
    scores highest (ties shared evenly), and the number of facts."""
    picked, facts = 0.0, _facts(split, doc_tokens, docs)
    for fact in facts:
        scores = [(rule.score(offsets), true) for offsets, true in fact]
        top = max(s for s, _ in scores)
        winners = [true for s, true in scores if s == top]
        picked += sum(winners) / len(winners)
    return {"facts": len(facts), "pick": picked / max(1, len(facts))}


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m fathom_lab.audit.value_tells", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=16_000)
    parser.add_argument("--docs", type=cli.integer(1), default=50, help="held-out documents")
    return parser


if __name__ == "__main__":
    import json

    args = build_parser().parse_args()
    rule = learn_rule(args.doc_tokens)
    train = pick_rate("train", args.doc_tokens, rule, TRAIN_DOCS)
    heldout = pick_rate("heldout", args.doc_tokens, rule, args.docs)
    print(json.dumps({f"train (in-sample, {TRAIN_DOCS} documents)": train, "heldout": heldout}))
