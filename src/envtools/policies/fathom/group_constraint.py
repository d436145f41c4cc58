"""A code-only attack on the retracted statements: the group structure of their followers.

Every one-off fact (birth, mentor, maker, founding, seat) is told once and contradicted by a
fixed number of retracted false statements about the same subject in the same shapes; the true
one is followed by a dismissal, each false one by a retraction, both stock sentences of the
split. Up to `fathom-docs-6` exactly one follower per fact was a dismissal while the
retractions were dealt from a wider set, so the dismissal wordings were the few stock sentences
that together hit every fact's statements once: this solver found them without reading a word
of them and beat the bar (single_hop 0.87 at 16K). Since `fathom-docs-7` a document uses one
dismissal and five retractions, each exactly once per fact (followers.py in the generator), so
counting finds six sentences that all hit every fact once, and which of them says "this stands"
must be told some other way: here by the cheapest rule that does best on `train`
(`class_labeler`: a count over the sentence's words, its distance from the others, or word
weights learned on `train`), or with `--polarity` by the best on `train` of those and the polarity
rules (the sign of a sentence as the product of its words' signs: "Nobody ever found a mistake"
reads positive, "Nobody could defend the entry" negative), or by the rule `--rule` names.

Per document it takes the nameless, digit-free sentences that recur word for word (the stock
sentences), the statements right before them in the same paragraph, and groups those statements
by their subject (pronouns resolved to the previous sentence's subject) and by whether they hold
a year (birth and founding do; mentor, maker and seat do not). It then takes, class by class,
the `CLASS_SIZE` stock sentences whose hits per group best match one per fact (a group of n
statements holds n / `FOLLOWER_CLASSES` facts), lets the labeler pick the dismissal class, and
favours a candidate statement whose follower is in it over one whose follower is another stock
sentence; a question about a one-off relation is answered first from the statements of its name
that a picked dismissal follows. Everything else is the keyword solver (word weights learned on
`train`); the numbers of its own (`CLASS_SIZE`, `FOLLOWER_CLASSES`, `GROUP_WEIGHT`,
`ODD_GROUP_WEIGHT`) and the labeler's rule were read off `train`. Nothing of the evaluated split
but its text is read.

Run: `uv run python -m envtools.policies.fathom.group_constraint --split heldout
--doc-tokens 16000` (learning on `train` at the same length); `--limit N` answers the first N
rows, and beyond the split's own rows (500 held-out) further documents of its seed range. It
prints each family's correctness, its number of questions and the upper end of its 95% (Wilson)
interval. `--diagnose` also checks the classes found and the pick against the split's grammar
tables (a check only; the attack never reads them).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterator

import numpy as np
from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS

from envtools import cli
from envtools.policies.fathom.class_labeler import (
    ClassLabeler,
    learn_labeler,
    pick_share,
    rule_names,
)
from envtools.policies.fathom.follower_frequency import stock_sentences
from envtools.policies.fathom.keyword_solver import (
    SENTENCE_STARTS,
    YEAR,
    KeywordSolver,
    Text,
    WordWeights,
    answer_split,
    learn,
    split_pairs,
)

_CHANGING = frozenset({"residence", "owner"})
CLASS_SIZE = 1
"""Wordings per follower class (the same in every `train` document)."""
FOLLOWER_CLASSES = 6
"""Follower classes per document: one per statement of a fact (the same in every `train`
document at these lengths)."""
GROUP_WEIGHT = 20.0
"""Added to a statement followed by a found dismissal, taken from one followed by another
stock sentence."""
ODD_GROUP_WEIGHT = 0.25
"""Weight of a group whose size is not one fact's (chosen on `train` documents)."""
TRAIN_DOCS = 30
"""`train` documents the class-picking rule is chosen on."""
MAX_STOCK = CLASS_SIZE * FOLLOWER_CLASSES
"""Stock sentences kept (most frequent first): the followers, not a filler sentence that
happens to recur."""

# Mentions, overlapping ("The Modae Circle" holds "The Modae" and "Modae Circle").
_MENTION = re.compile(
    r"(?=\b(?:[Tt]he ([A-Z][a-z]+ [A-Z][a-z]+(?: [A-Z][a-z]+)?)\b"
    r"|((?:Master|Mistress) [A-Z][a-z]+)\b|([A-Z][a-z]+ [A-Z][a-z]+)\b))"
)
_SUBJECT_PRONOUN = re.compile(r"\b(?:he|she|it|they)\b", re.I)
# "It was recorded that ...", "as it turned out": an "it" that stands for no one.
_EXPLETIVE = re.compile(
    r"\bit (?:(?:was|is)(?: \w+){0,3} that|turned out|seems|seemed|so happened|happened|were)\b",
    re.I,
)


def _stock_sentences(doc: Text) -> list[str]:
    counts = stock_sentences(doc)
    return sorted(counts, key=lambda s: (-counts[s], s))[:MAX_STOCK]


def _followed_statements(doc: Text, stock: set[str]) -> dict[int, str]:
    """Statement index -> the stock sentence right after it in the same paragraph."""
    out = {}
    for i, (_, sentence) in enumerate(doc.sentences):
        following = doc.next_in_paragraph(i)
        if following in stock and sentence not in stock:
            out[i] = following
    return out


def _best_subset(
    hits: np.ndarray, facts: np.ndarray, weights: np.ndarray, size: int
) -> tuple[int, ...]:
    """The `size` columns of `hits` (groups x wordings) whose row sums best match `facts`
    (least squares, each group's error times its weight)."""
    n = hits.shape[1]
    if n <= size:
        return tuple(range(n))
    combos = np.array(list(itertools.combinations(range(n), size)), dtype=np.int64)
    best: tuple[float, tuple[int, ...]] | None = None
    # In chunks: all subsets at once would be groups x subsets large.
    for start in range(0, len(combos), 20_000):
        chunk = combos[start : start + 20_000]
        per_group = hits[:, chunk].sum(axis=2)  # groups x subsets
        loss = (weights[:, None] * (per_group - facts[:, None]) ** 2).sum(axis=0)
        k = int(loss.argmin())
        if best is None or loss[k] < best[0]:
            best = (float(loss[k]), tuple(int(c) for c in chunk[k]))
    assert best is not None
    return best[1]


def _classes(hits: np.ndarray, facts: np.ndarray, weights: np.ndarray) -> list[tuple[int, ...]]:
    """Columns of `hits` grouped into classes: the best-fitting `CLASS_SIZE` columns, then the
    best of the rest, and so on."""
    left = list(range(hits.shape[1]))
    out: list[tuple[int, ...]] = []
    while len(out) < FOLLOWER_CLASSES and len(left) >= CLASS_SIZE:
        best = _best_subset(hits[:, left], facts, weights, CLASS_SIZE)
        chosen = tuple(left[k] for k in best)
        out.append(chosen)
        left = [c for c in left if c not in chosen]
    return out


def _mentions(doc: Text, sentence: str) -> list[tuple[int, str, bool]]:
    """(offset, canonical name, is a thing) of the people, things and aliases a sentence
    names; a thing ("the Ketrex Guild", "the Magreld Sextant") is an organisation or object."""
    out = []
    for m in _MENTION.finditer(sentence):
        thing, honorific, name = m.groups()
        if thing:
            out.append((m.start(), thing, True))
        elif honorific:
            out.append((m.start(), doc.canonical(honorific) or honorific, False))
        elif name and not {*name.split()} & SENTENCE_STARTS:
            out.append((m.start(), name, False))
    low = sentence.lower()
    out += [(low.find(a), doc.aliases[a], False) for a in doc.aliases if a in low]
    return sorted(out)


def _subjects(doc: Text) -> list[str | None]:
    """Each sentence's subject: a thing it names (a founding, seat or maker is told of an
    organisation or object, the people in it are values), else the previous subject when a
    pronoun comes first, else the first person it names."""
    out: list[str | None] = []
    previous = None
    for _, sentence in doc.sentences:
        mentions = _mentions(doc, sentence)
        things = [name for _, name, thing in mentions if thing]
        plain = _EXPLETIVE.sub(lambda m: "x" * len(m.group()), sentence)
        pronoun = _SUBJECT_PRONOUN.search(plain)
        if things:
            subject: str | None = things[0]
        elif pronoun and (not mentions or pronoun.start() < mentions[0][0]):
            subject = previous
        else:
            subject = mentions[0][1] if mentions else None
        out.append(subject)
        previous = subject or previous
    return out


class FollowerGroups:
    """One document's stock sentences, its follower groups, the follower classes found and the
    one a labeler picks as the dismissals (all of them when no labeler is given)."""

    def __init__(self, doc: Text, labeler: ClassLabeler | None = None) -> None:
        stock = _stock_sentences(doc)
        self.stock = set(stock)
        self.follower = _followed_statements(doc, self.stock)
        subjects = _subjects(doc)
        groups: dict[tuple[str, bool], Counter[str]] = defaultdict(Counter)
        for i, following in self.follower.items():
            subject = subjects[i]
            if subject is not None:
                has_year = bool(YEAR.search(doc.sentences[i][1]))
                groups[subject, has_year][following] += 1
        column = {s: k for k, s in enumerate(stock)}
        hits = np.zeros((len(groups), len(stock)))
        for row, counts in enumerate(groups.values()):
            for s, n in counts.items():
                hits[row, column[s]] = n
        # A group of n statements tells n / FOLLOWER_CLASSES facts; a group of exactly one
        # fact's size is most likely one whole fact, the others are facts split or merged by a
        # wrong subject, so they count for less.
        sizes = hits.sum(axis=1)
        facts = sizes / FOLLOWER_CLASSES
        weights = np.where(sizes == FOLLOWER_CLASSES, 1.0, ODD_GROUP_WEIGHT)
        found = _classes(hits, facts, weights) if len(groups) else []
        self.classes = [[stock[k] for k in c] for c in found]
        if labeler is not None and self.classes:
            self.dismissals = frozenset(self.classes[labeler.pick(self.classes)])
        else:
            self.dismissals = frozenset()
        # The statements a found dismissal follows, by subject: read before any word weight.
        self.standing: dict[str, list[int]] = defaultdict(list)
        for i, following in self.follower.items():
            if following in self.dismissals and subjects[i] is not None:
                self.standing[subjects[i]].append(i)


class GroupConstraintSolver(KeywordSolver):
    """The keyword solver, plus a bonus for statements followed by a found dismissal wording."""

    def __init__(
        self, model: WordWeights, labeler: ClassLabeler, weight: float = GROUP_WEIGHT
    ) -> None:
        super().__init__(model)
        self.labeler = labeler
        self.weight = weight
        self._groups: dict[int, FollowerGroups] = {}

    def groups(self, doc: Text) -> FollowerGroups:
        found = self._groups.get(id(doc))
        if found is None:
            found = self._groups[id(doc)] = FollowerGroups(doc, self.labeler)
        return found

    def score(self, doc: Text, cls: str, i: int) -> float:
        total = super().score(doc, cls, i)
        groups = self.groups(doc)
        following = groups.follower.get(i)
        if following is not None and groups.dismissals:
            total += self.weight if following in groups.dismissals else -self.weight
        return total

    def hop(self, doc: Text, cls: str, name: str, kind: str) -> str | None:
        """A candidate of a statement about `name` that a found dismissal follows, else the
        keyword solver's best. Not for residence and ownership: they have no dismissals, and a
        birth statement would answer "where did X live" with the birthplace."""
        if cls.split(":")[-1] not in _CHANGING:
            for i in self.groups(doc).standing.get(doc.canonical(name) or name, []):
                sentence = doc.sentences[i][1]
                found = [
                    c for c in doc.candidates(kind, sentence) if c not in name and name not in c
                ]
                if found:
                    return found[-1] if kind == "year" else found[0]
        return super().hop(doc, cls, name, kind)


def labelled_groups(
    split: str, doc_tokens: int, docs: int | None
) -> Iterator[tuple[Text, FollowerGroups, int | None]]:
    """(document, its follower groups, index of the class holding the split's dismissals or
    None) per document: the generator's tables say which class is which, so this is for `train`
    (and for checking an attack after the fact). ``docs`` may exceed the split's own documents:
    the rest come from the split's seed range."""
    from fathom_rlm.documents import get_document, split_seeds
    from fathom_rlm.documents.grammar import split_grammar
    from fathom_rlm.documents.splits import QUESTIONS_PER_DOCUMENT

    truth = set(split_grammar(split).dismissals)
    seeds = split_seeds(split, None if docs is None else docs * QUESTIONS_PER_DOCUMENT)
    for seed in seeds:
        doc = Text(get_document(seed, doc_tokens=doc_tokens).text)
        groups = FollowerGroups(doc)
        right = [k for k, c in enumerate(groups.classes) if set(c) <= truth]
        yield doc, groups, (right[0] if len(right) == 1 else None)


def learn_group_labeler(
    doc_tokens: int,
    docs: int = TRAIN_DOCS,
    with_polarity: bool = False,
    rule: str | None = None,
) -> ClassLabeler:
    """The class-picking rule that does best on `train` documents at `doc_tokens` (among the
    counting rules, and the polarity rules too `with_polarity`), or `rule`."""
    labelled = labelled_groups("train", doc_tokens, docs)
    pairs = [(g.classes, k) for _, g, k in labelled if k is not None]
    return learn_labeler(pairs, with_polarity, rule)


def answers_by_family(
    labeler: ClassLabeler, split: str, doc_tokens: int, limit: int | None = None
) -> dict[str, list[bool]]:
    """Word weights learned on `train` at `doc_tokens`, then right or wrong per question of
    `split` (its first `limit` rows), per family."""
    solver = GroupConstraintSolver(learn(split_pairs("train", doc_tokens)), labeler)
    return answer_split(solver, split, doc_tokens, limit)


def accuracy_by_family(
    split: str = "heldout",
    doc_tokens: int = 200_000,
    limit: int | None = None,
    with_polarity: bool = False,
    rule: str | None = None,
) -> dict[str, float]:
    """Learn on `train` at `doc_tokens`, then mean correctness per family over `split`."""
    labeler = learn_group_labeler(doc_tokens, with_polarity=with_polarity, rule=rule)
    right = answers_by_family(labeler, split, doc_tokens, limit)
    return {family: sum(v) / len(v) for family, v in sorted(right.items())}


def wilson_upper(right: int, n: int, z: float = 1.96) -> float:
    """The upper end of the Wilson score interval of `right` out of `n` (95% by default)."""
    if n == 0:
        return 1.0
    p = right / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre + spread) / (1 + z * z / n)


def class_diagnostic(
    split: str, doc_tokens: int, docs: int | None = None, labeler: ClassLabeler | None = None
) -> dict[str, object]:
    """How often the dismissal class is among the classes found, how often the rule learned on
    `train` (or `labeler`'s) picks it, and the best any of its rules would have done on `split`
    in hindsight (a check of the attack against the grammar tables, never part of it)."""
    labeler = labeler or learn_group_labeler(doc_tokens)
    found = picked = n = 0
    hindsight: Counter[str] = Counter()
    for _, groups, right in labelled_groups(split, doc_tokens, docs):
        n += 1
        classes = groups.classes
        if right is not None:
            found += 1
            picked += labeler.pick(classes) == right
            for rule, scores in labeler.scores(classes).items():
                hindsight[rule] += pick_share(scores, right)
    best = max(sorted(hindsight.items()), key=lambda kv: kv[1], default=("", 0.0))
    return {
        "documents": n,
        "rule": labeler.rule,
        "rule_on_train": round(labeler.train_share, 3),
        "dismissal_class_found": found / max(1, n),
        "dismissal_class_picked": picked / max(1, n),
        "best_rule_in_hindsight": best[0],
        "its_share": round(best[1] / max(1, n), 3),
    }


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.policies.fathom.group_constraint",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--split", default="heldout", choices=("train", "eval", "heldout"))
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=200_000)
    parser.add_argument(
        "--limit",
        type=cli.integer(1),
        default=None,
        help="answer only the first rows (more than the split holds: from its seed range)",
    )
    parser.add_argument(
        "--polarity", action="store_true", help="choose among the polarity rules on train too"
    )
    parser.add_argument(
        "--rule", default=None, choices=rule_names(), help="pick the dismissal by this rule"
    )
    parser.add_argument(
        "--diagnose", action="store_true", help="also check the classes found and the pick"
    )
    return parser


if __name__ == "__main__":
    import json

    args = build_parser().parse_args()
    chosen = learn_group_labeler(args.doc_tokens, with_polarity=args.polarity, rule=args.rule)
    right = answers_by_family(chosen, args.split, args.doc_tokens, args.limit)
    out: dict[str, object] = {
        "rule": chosen.rule,
        "accuracy": {f: round(sum(v) / len(v), 3) for f, v in sorted(right.items())},
        "questions": {f: len(v) for f, v in sorted(right.items())},
        "upper_95": {f: round(wilson_upper(sum(v), len(v)), 3) for f, v in sorted(right.items())},
    }
    if args.diagnose:
        docs = None if args.limit is None else max(1, args.limit // 10)
        out["classes"] = class_diagnostic(args.split, args.doc_tokens, docs, chosen)
    print(json.dumps(out, indent=1))
