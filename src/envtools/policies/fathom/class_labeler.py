"""Which follower class says "this stands"? Rules for telling it without reading, learned on train.

Since `fathom-docs-7` the followers of the one-off facts come in classes that meet every fact
exactly once (followers.py in the generator): the group-constraint attack (`group_constraint`)
finds the classes by counting, and then has to pick the dismissal class among them. This module
is that pick, done as cheaply as code can: each rule scores a class by one count over its
wordings and takes the highest (or the lowest), or takes the class nearest to (or farthest from)
the middle of all of them; the word rule sums word weights learned on `train`. The lexicons are
written from English, not from the generator's tables. `learn_labeler` keeps the rule that picks
the dismissal class most often in `train` documents (where the generator's annotations say which
class it is), so nothing of the evaluated split but its text is read.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from envtools import cli
from envtools.policies.fathom.keyword_solver import (
    CONTRAST_MARKERS,
    CORRECTION_CUES,
    NEGATION_CUES,
)

_NEGATION = re.compile(r"\b(?:not|no|none|nobody|nothing|never|nor|neither)\b|n't\b|no one|in vain")
_BLAME = re.compile(
    r"\b(?:wrong|false|error|mistake\w*|untrue|fiction|myth|forg\w+|spurious|baseless|muddle|"
    r"confus\w*|invent\w*|lie|lies|lied)\b"
)
_PRAISE = re.compile(
    r"\b(?:right|true|truth|held|stood|stands|cleared|sound|good|confirmed|proved|correct|"
    r"accurate|faithful|genuine|honest|upheld|bore|borne|agreed|matched|settled)\b"
)
_TIME = re.compile(r"\b(?:later|soon|next|afterwards|after|within|years?|week|spring|winter)\b")
_WORD = re.compile(r"[a-z']+")


def _count(pattern: re.Pattern) -> Callable[[str], float]:
    return lambda s: float(len(pattern.findall(s.lower())))


def _parity(s: str) -> float:
    low = s.lower()
    return float((len(_NEGATION.findall(low)) + len(_BLAME.findall(low))) % 2)


FEATURES: dict[str, Callable[[str], float]] = {
    "negation": _count(_NEGATION),
    "blame": _count(_BLAME),
    "praise": _count(_PRAISE),
    "correction_cues": _count(CORRECTION_CUES),
    "negation_cues": _count(NEGATION_CUES),
    "contrast": _count(CONTRAST_MARKERS),
    "time_words": _count(_TIME),
    "double_negative": lambda s: float(
        bool(_NEGATION.search(s.lower()) and _BLAME.search(s.lower()))
    ),
    "parity": _parity,
    "ever": lambda s: float("ever" in _WORD.findall(s.lower())),
    "words": lambda s: float(len(_WORD.findall(s.lower()))),
    "commas": lambda s: float(s.count(",") + s.count(";")),
    "opens_with_it": lambda s: float(s.startswith("It ")),
}


def word_weights(dismissals: Sequence[str], retractions: Sequence[str]) -> dict[str, float]:
    """Log-odds of each word between two lists of sentences (each word once per sentence)."""
    d = Counter(w for s in dismissals for w in set(_WORD.findall(s.lower())))
    r = Counter(w for s in retractions for w in set(_WORD.findall(s.lower())))
    nd, nr = len(dismissals) + 1, len(retractions) + 1
    return {w: math.log((d[w] + 0.5) / nd) - math.log((r[w] + 0.5) / nr) for w in d | r}


def rule_scores(classes: Sequence[Sequence[str]], weights: dict[str, float]) -> dict[str, list]:
    """Every rule's score of every class (the rule picks the highest)."""
    profile = np.array([[sum(f(s) for s in c) for f in FEATURES.values()] for c in classes])
    out: dict[str, list] = {}
    for j, name in enumerate(FEATURES):
        out[f"most {name}"] = list(profile[:, j])
        out[f"least {name}"] = list(-profile[:, j])
    spread = profile.std(axis=0)
    spread[spread == 0] = 1.0
    distance = (np.abs(profile - profile.mean(axis=0)) / spread).sum(axis=1)
    out["nearest the middle"] = list(-distance)
    out["farthest from the middle"] = list(distance)
    out["word weights"] = [
        sum(weights.get(w, 0.0) for s in c for w in set(_WORD.findall(s.lower()))) for c in classes
    ]
    return out


def pick_share(scores: Sequence[float], right: int) -> float:
    """The share of the pick that goes to class `right` when the best scores tie."""
    best = max(scores)
    tied = [k for k, v in enumerate(scores) if v == best]
    return (right in tied) / len(tied)


class ClassLabeler:
    """Picks a document's dismissal class by one rule chosen on `train`."""

    def __init__(self, rule: str, weights: dict[str, float], train_share: float) -> None:
        self.rule = rule
        self.weights = weights
        self.train_share = train_share

    def pick(self, classes: Sequence[Sequence[str]]) -> int:
        scores = rule_scores(classes, self.weights)[self.rule]
        return int(np.argmax(scores))


def learn_labeler(labelled: Sequence[tuple[Sequence[Sequence[str]], int]]) -> ClassLabeler:
    """The rule that picks the right class most often over `labelled` (train documents'
    classes, each with the index of its dismissal class). Word weights are judged on wordings
    they were not learned from (each document's own wordings left out), as they will meet the
    held-out split's."""
    dismissals = {s for classes, k in labelled for s in classes[k]}
    retractions = {s for classes, k in labelled for j, c in enumerate(classes) if j != k for s in c}
    totals: Counter[str] = Counter()
    for classes, k in labelled:
        own = {s for c in classes for s in c}
        held_out = word_weights(sorted(dismissals - own), sorted(retractions - own))
        for rule, scores in rule_scores(classes, held_out).items():
            totals[rule] += pick_share(scores, k)
    rule, best = max(sorted(totals.items()), key=lambda kv: kv[1])
    weights = word_weights(sorted(dismissals), sorted(retractions))
    return ClassLabeler(rule, weights, best / max(1, len(labelled)))


def table_rates(split: str, draws: int = 20_000, seed: int = 0) -> dict[str, float]:
    """Each rule's chance of picking the dismissal of a `split` document, computed from the
    grammar tables alone: a document draws one dismissal and five different retractions of its
    split at random (followers.py in the generator), so this is the rate over many documents,
    without the noise of finding the followers in text. Word weights are learned on `train`'s
    tables (so on `train` itself they are in-sample). Chance is one in six.

    Run: `uv run python -m envtools.policies.fathom.class_labeler`.
    """
    from fathom_rlm.documents.followers import draw_followers
    from fathom_rlm.documents.grammar import split_grammar
    from fathom_rlm.documents.render import MAX_RETRACTED_PER_FACT  # documents of 12K tokens up

    g, train = split_grammar(split), split_grammar("train")
    weights = word_weights(train.dismissals, train.retractions)
    rng = np.random.default_rng(seed)
    totals: Counter[str] = Counter()
    for _ in range(draws):
        followers = draw_followers(rng.random, g.dismissals, g.retractions, MAX_RETRACTED_PER_FACT)
        for rule, scores in rule_scores([[s] for s in followers], weights).items():
            totals[rule] += pick_share(scores, 0)
    return {rule: n / draws for rule, n in sorted(totals.items())}


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.policies.fathom.class_labeler",
        description="each rule's chance of picking the dismissal",
    )
    parser.add_argument("--draws", type=cli.integer(1), default=20_000)
    return parser


if __name__ == "__main__":
    import json

    args = build_parser().parse_args()
    for split in ("train", "eval", "heldout"):
        rates = table_rates(split, args.draws)
        top = sorted(rates.items(), key=lambda kv: -kv[1])[:5]
        print(json.dumps({"split": split, "best rules": {k: round(v, 3) for k, v in top}}))
