"""Which follower class says "this stands"? Rules for telling it without reading, learned on train.

Since `fathom-docs-7` the followers of the one-off facts come in classes that meet every fact
exactly once (followers.py in the generator): the group-constraint attack (`group_constraint`)
finds the classes by counting, and then has to pick the dismissal class among them. This module
is that pick, done as cheaply as code can: each rule scores a class by one count over its
wordings and takes the highest (or the lowest), or takes the class nearest to (or farthest from)
the middle of all of them; the word rule sums word weights learned on `train`. The lexicons of
those counting rules are written from English, not from the generator's tables. `learn_labeler`
keeps the rule that picks the dismissal class most often in `train` documents (where the
generator's annotations say which class it is), so nothing of the evaluated split but its text is
read.

The polarity rules read a little more than one count: a sentence's sign is the product of the
signs of its words, so "Nobody ever found a mistake" (a negation times a word of error) reads
positive and "Nobody could defend the entry" (a negation times a plain verb) negative, and the
dismissal is the class that reads positive. A word flips the sign when it is a negation, a word
of error or doubt, or a verb of reversal: lists written from the words of `train`'s two tables
only (every cue is checked to occur in them), then signs of further words learned on `train`
(`learn_signs`); a clause of time ("once the error came to light") and the first half of "..., and
later ..." are out of scope. Ties among the classes that read positive go to the one with the
most (or fewest) flipping words, whichever did better on `train`. They are kept apart from the
counting rules (`with_polarity`): the tables are matched against counting, not against this.
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
# Words that flip a sentence's sign, written from the words of `train`'s dismissals and
# retractions and nothing else (a test checks that each occurs there).
POLARITY_CUE_WORDS: dict[str, tuple[str, ...]] = {
    "negation": ("not", "no", "nobody", "none", "nothing", "never"),
    "error or doubt": (
        r"mistak\w*", "errors?", r"wrong\w*", "backwards", r"forg\w+", "spurious", "slips?",
        "misheard", "wanting", r"doubt\w*", r"disput\w*", r"question\w*", "den(?:y|ie[sd])",
        "rumou?rs?",
    ),
    "reversal": (
        "against", "otherwise", "another", "apart", r"collaps\w*", r"withdr\w*", "put right",
        "cleared", "shaken", "correction",
    ),
}  # fmt: skip
POLARITY_CUES = re.compile(
    r"\b(?:" + "|".join(w for ws in POLARITY_CUE_WORDS.values() for w in ws) + r")\b"
)
_AND_LATER = re.compile(r",? and later\b")  # "questioned at first, and later held up" says Y
OUT_OF_SCOPE = (
    re.compile(r"\b(?:once|as soon as)\b[^,;]*"),  # a clause of time
    re.compile(r"\bnothing more\b"),  # "a misheard name, nothing more": no negation
)
"""What sets no sign (from `train`'s tables too), besides what comes before ", and later"."""
SIGN_EVIDENCE = 2
"""A learned word flips the sign only when that puts at least this many more `train` sentences
on their own side than it takes off."""
_TIME = re.compile(r"\b(?:later|soon|next|afterwards|after|within|years?|week|spring|winter)\b")
_WORD = re.compile(r"[a-z']+")
_STEM = 5  # learned signs are of a word's first letters: "doubted" ~ "doubters"


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


def polarity_scope(sentence: str) -> str:
    """The lower-cased part of `sentence` whose words set its sign."""
    low = _AND_LATER.split(sentence.lower())[-1]
    for pattern in OUT_OF_SCOPE:
        low = pattern.sub(" ", low)
    return low


def _stems(text: str) -> list[str]:
    return [w[:_STEM] for w in _WORD.findall(text)]


def sign_flips(sentence: str, signs: frozenset[str]) -> int:
    """How many words in scope flip the sentence's sign: the cues, and the learned word stems
    `signs` (a stem that is also a cue cancels it)."""
    scope = polarity_scope(sentence)
    return len(POLARITY_CUES.findall(scope)) + sum(w in signs for w in _stems(scope))


def learn_signs(dismissals: Sequence[str], retractions: Sequence[str]) -> frozenset[str]:
    """Word stems whose sign flips, fit so that a sentence's product of signs (the cues' and
    these) is positive for the dismissals and negative for the retractions: one stem at a time,
    kept when it puts `SIGN_EVIDENCE` more sentences on their own side than it takes off."""
    sentences = [*dismissals, *retractions]
    stems = [Counter(_stems(polarity_scope(s))) for s in sentences]
    vocab = sorted({w for c in stems for w in c})
    if not vocab:
        return frozenset()
    odd = np.array([[c[w] % 2 for w in vocab] for c in stems])
    parity = np.array([len(POLARITY_CUES.findall(polarity_scope(s))) % 2 for s in sentences])
    wanted = np.array([0] * len(dismissals) + [1] * len(retractions))
    learned: set[str] = set()
    while True:  # each flip puts more sentences on their side, so this ends
        gain = np.where(parity != wanted, 1, -1) @ odd  # what flipping each stem would win
        k = int(np.argmax(gain))
        if gain[k] < SIGN_EVIDENCE:
            break
        learned ^= {vocab[k]}
        parity = parity ^ odd[:, k]
    return frozenset(learned)


def polarity_scores(classes: Sequence[Sequence[str]], signs: frozenset[str]) -> dict[str, list]:
    """The polarity rules' scores of every class: how many of its wordings read positive, the
    ties broken by the most or the fewest flipping words."""
    flips = [[sign_flips(s, signs) for s in c] for c in classes]
    positive = [sum(1 - 2 * (n % 2) for n in c) for c in flips]
    return {
        "polarity": [float(p) for p in positive],
        "polarity, most flips": [100.0 * p + sum(c) for p, c in zip(positive, flips, strict=True)],
        "polarity, fewest flips": [
            100.0 * p - sum(c) for p, c in zip(positive, flips, strict=True)
        ],
    }


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


POLARITY_RULES = ("polarity", "polarity, most flips", "polarity, fewest flips")


def rule_names() -> tuple[str, ...]:
    """Every rule's name: the counting rules', then the polarity rules'."""
    counting = [f"{end} {name}" for name in FEATURES for end in ("most", "least")]
    middle = ["nearest the middle", "farthest from the middle", "word weights"]
    return (*counting, *middle, *POLARITY_RULES)


def all_rule_scores(
    classes: Sequence[Sequence[str]], weights: dict[str, float], signs: frozenset[str] | None
) -> dict[str, list]:
    """The counting rules' scores, and the polarity rules' too unless `signs` is None."""
    out = rule_scores(classes, weights)
    if signs is not None:
        out |= polarity_scores(classes, signs)
    return out


class ClassLabeler:
    """Picks a document's dismissal class by one rule chosen on `train`."""

    def __init__(
        self,
        rule: str,
        weights: dict[str, float],
        train_share: float,
        signs: frozenset[str] | None = None,
    ) -> None:
        self.rule = rule
        self.weights = weights
        self.train_share = train_share
        self.signs = signs  # None: the polarity rules are not among this labeler's

    def scores(self, classes: Sequence[Sequence[str]]) -> dict[str, list]:
        return all_rule_scores(classes, self.weights, self.signs)

    def pick(self, classes: Sequence[Sequence[str]]) -> int:
        return int(np.argmax(self.scores(classes)[self.rule]))


def learn_labeler(
    labelled: Sequence[tuple[Sequence[Sequence[str]], int]],
    with_polarity: bool = False,
    rule: str | None = None,
) -> ClassLabeler:
    """The rule that picks the right class most often over `labelled` (train documents'
    classes, each with the index of its dismissal class), among the counting rules and, with
    `with_polarity`, the polarity rules; or `rule` itself. Word weights and learned signs are
    judged on wordings they were not learned from (each document's own wordings left out), as
    they will meet the held-out split's."""
    with_polarity = with_polarity or rule in POLARITY_RULES
    dismissals = {s for classes, k in labelled for s in classes[k]}
    retractions = {s for classes, k in labelled for j, c in enumerate(classes) if j != k for s in c}
    totals: Counter[str] = Counter()
    for classes, k in labelled:
        own = {s for c in classes for s in c}
        d, r = sorted(dismissals - own), sorted(retractions - own)
        signs = learn_signs(d, r) if with_polarity else None
        for name, scores in all_rule_scores(classes, word_weights(d, r), signs).items():
            totals[name] += pick_share(scores, k)
    if rule is None:
        rule = max(sorted(totals.items()), key=lambda kv: kv[1])[0]
    elif rule not in totals:
        raise ValueError(f"unknown rule {rule!r}; one of {sorted(totals)}")
    d, r = sorted(dismissals), sorted(retractions)
    signs = learn_signs(d, r) if with_polarity else None
    return ClassLabeler(rule, word_weights(d, r), totals[rule] / max(1, len(labelled)), signs)


def table_rates(
    split: str, draws: int = 20_000, seed: int = 0, with_polarity: bool = False
) -> dict[str, float]:
    """Each rule's chance of picking the dismissal of a `split` document, computed from the
    grammar tables alone: a document draws one dismissal and five different retractions of its
    split at random (followers.py in the generator), so this is the rate over many documents,
    without the noise of finding the followers in text. Word weights and the polarity rules'
    signs are learned on `train`'s tables (so on `train` itself they are in-sample, as are the
    polarity cues, written from them). Chance is one in six.

    Run: `uv run python -m envtools.policies.fathom.class_labeler`.
    """
    from fathom_rlm.documents.followers import draw_followers
    from fathom_rlm.documents.grammar import split_grammar
    from fathom_rlm.documents.render import MAX_RETRACTED_PER_FACT  # documents of 12K tokens up

    g, train = split_grammar(split), split_grammar("train")
    weights = word_weights(train.dismissals, train.retractions)
    signs = learn_signs(train.dismissals, train.retractions) if with_polarity else None
    rng = np.random.default_rng(seed)
    totals: Counter[str] = Counter()
    for _ in range(draws):
        followers = draw_followers(rng.random, g.dismissals, g.retractions, MAX_RETRACTED_PER_FACT)
        for rule, scores in all_rule_scores([[s] for s in followers], weights, signs).items():
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
        rates = table_rates(split, args.draws, with_polarity=True)
        counting = sorted(
            (kv for kv in rates.items() if kv[0] not in POLARITY_RULES), key=lambda kv: -kv[1]
        )
        out = {
            "split": split,
            "best counting rules": {k: round(v, 3) for k, v in counting[:5]},
            "polarity rules": {k: round(rates[k], 3) for k in POLARITY_RULES},
        }
        print(json.dumps(out))
