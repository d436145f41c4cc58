"""A code-only attack on the retracted statements: their years beside the other years of a name.

Since `fathom-docs-7` every follower of a document meets every one-off fact once, so a whole
follower class is true or false together, and any difference between true and false statements
adds up over the document. A red-team pass on the first draft of that generator found one in
the ordinary hard negatives (negated, rumoured, quoted ... sentences): a false birth year was
drawn one to nine years before the true one, a false founding year one to nine after it. So
the class whose years sat just after (births) or just before (foundings) the years of the other
sentences naming the same people was the true one: a hand-made rule picked it in 0.91 to 0.98 of
held-out documents, and this module's rule, which knows no window but learns one, in 0.76 at
16K tokens. The generator now draws those years from the whole range and never reuses any of a
fact's six values (`distractors.DistractorMaker.stated`).

This is that attack, made general. Per document it finds the follower classes as the
group-constraint attack does (`group_constraint.FollowerGroups`); for every statement a class
follows and every other sentence that shares a capitalised name with it and holds a year, it
takes the offset between the two years, and it sums, per class, weights learned on `train`
(the log-odds of each offset for a true statement against a retracted one, apart for statements
about a thing, an organisation or object, and about a person). The class with the highest sum
is taken for the dismissal. Nothing of the evaluated split but its text is read.

Run: `uv run python -m envtools.policies.fathom.value_tells --doc-tokens 16000`: the share of
documents whose dismissal it picks (one in six is chance), on `train` (in-sample) and held-out.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS

from envtools import cli
from envtools.policies.fathom.group_constraint import FollowerGroups, labelled_groups
from envtools.policies.fathom.keyword_solver import YEAR, Text

MAX_OFFSET = 30
_NAME = re.compile(r"\b[A-Z][a-z]+\b")
_THING = re.compile(r"\b[Tt]he [A-Z][a-z]+ [A-Z][a-z]+")
_NOT_NAMES = frozenset({"The", "He", "She", "It", "Chapter", "Mistress", "Master"})
Offsets = Counter  # (kind, offset) -> count


def _names(sentence: str) -> set[str]:
    return {n for n in _NAME.findall(sentence)[1:] if n not in _NOT_NAMES}


def class_offsets(doc: Text, groups: FollowerGroups) -> dict[str, Offsets]:
    """Per follower sentence: how often each (kind, year offset) occurs between a statement it
    follows and another sentence sharing a name with that statement."""
    followed = groups.follower
    by_name: dict[str, list[int]] = defaultdict(list)
    years: dict[int, list[int]] = {}
    for i, (_, sentence) in enumerate(doc.sentences):
        found = [int(y) for y in YEAR.findall(sentence)]
        if found and i not in followed and sentence not in groups.stock:
            years[i] = found
            for name in _names(sentence):
                by_name[name].append(i)
    out: dict[str, Offsets] = defaultdict(Counter)
    for i, following in followed.items():
        sentence = doc.sentences[i][1]
        own = YEAR.findall(sentence)
        if not own:
            continue
        names = _names(sentence)
        if i and re.match(r"(?:She|He|It)\b", sentence):
            names |= _names(doc.sentences[i - 1][1])
        kind = "thing" if _THING.search(sentence) else "person"
        near = {j for name in names for j in by_name.get(name, ())}
        for j in near:
            for year in years[j]:
                offset = year - int(own[-1])
                if abs(offset) <= MAX_OFFSET:
                    out[following][kind, offset] += 1
    return out


class ValueRule:
    """Log-odds per (kind, offset) of a true statement against a retracted one, from `train`."""

    def __init__(self, true: Offsets, false: Offsets) -> None:
        n_true, n_false = sum(true.values()) + 1, sum(false.values()) + 1
        self.weights = {
            key: math.log((true[key] + 0.5) / n_true) - math.log((false[key] + 0.5) / n_false)
            for key in true | false
        }

    def pick(self, classes: list[list[str]], offsets: dict[str, Offsets]) -> int:
        scores = [
            sum(self.weights.get(key, 0.0) * n for s in c for key, n in offsets[s].items())
            for c in classes
        ]
        return max(range(len(classes)), key=lambda k: (scores[k], -k))


def _documents(split: str, doc_tokens: int, docs: int | None) -> Iterable[tuple]:
    """(classes, offsets per follower, index of the dismissal class or None) per document."""
    for doc, groups, right in labelled_groups(split, doc_tokens, docs):
        yield groups.classes, class_offsets(doc, groups), right


def learn_rule(doc_tokens: int, docs: int = 30) -> ValueRule:
    true, false = Counter(), Counter()
    for classes, offsets, right in _documents("train", doc_tokens, docs):
        for k, c in enumerate(classes):
            for s in c:
                (true if k == right else false).update(offsets[s])
    return ValueRule(true, false)


def pick_rate(split: str, doc_tokens: int, rule: ValueRule, docs: int | None = None) -> float:
    """Share of `split` documents whose dismissal class the rule picks (the grammar tables say
    which it is; a check after the fact, never part of the attack)."""
    picked = n = 0
    for classes, offsets, right in _documents(split, doc_tokens, docs):
        n += 1
        picked += right is not None and rule.pick(classes, offsets) == right
    return picked / max(1, n)


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.policies.fathom.value_tells", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=16_000)
    return parser


if __name__ == "__main__":
    import json

    args = build_parser().parse_args()
    rule = learn_rule(args.doc_tokens)
    print(
        json.dumps(
            {
                "train (in-sample, 30 documents)": pick_rate("train", args.doc_tokens, rule, 30),
                "heldout": pick_rate("heldout", args.doc_tokens, rule),
            }
        )
    )
