"""Measure the code-only verdict attacks (`verdict_attacks.py`) on a split, per question family.

Everything the attacks learn is learned on `train` at the same document length: the keyword
solver's word weights (its first `KEYWORD_ROWS` rows), the lexicon rule and the one-pick rule
(`TRAIN_DOCS` documents and their annotations); attack (f), ``english-reader``
(`english_reader.py`), learns nothing and reads the verdicts with hand-written English word
lists. The evaluated split is then read as text only; its annotations are used after the fact,
for two checks that are not part of any attack:

* ``pick``: the share of contested facts whose true statement the rater scores highest among the
  fact's statements, the facts grouped by the annotations (one in six is chance);
* ``settled``: what one decision settles per document. For a verdict sentence (or a triple of
  parts), the questions whose every contested statement it follows when true; the largest such
  number in any document, and on average over documents. A sign table settles every question
  that rests on a contested statement: their count per document is given as ``one_off``.

Correctness per family comes with the upper end of its 95% interval, a document's questions
resampled together (`stats.clustered_upper`: they share one document, so they are not
independent trials). Run:
`uv run python -m fathom_lab.audit.verdict_audit --split heldout --n 1000
--doc-tokens 16000`; ``--one-pick-rules`` adds one-pick rules besides the one chosen on `train`.
The tables are in environments/fathom_rlm/docs/reward_audit.md ("Code-only attacks").
"""

from __future__ import annotations

import itertools
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS

from envtools import cli
from envtools.stats import clustered_upper
from fathom_lab.audit.english_reader import EnglishReader
from fathom_lab.audit.english_signs import english_sign
from fathom_lab.audit.keyword_solver import KeywordSolver, Text, WordWeights, learn
from fathom_lab.audit.verdict_attacks import (
    COUNT_KEYS,
    ONE_PICK_RULES,
    GroupSignRater,
    OnePickRater,
    Rater,
    SignSystemRater,
    VerdictSolver,
    document_picks,
    fit_lexicon,
    fit_one_pick,
    pick_share,
    verdicts_of,
)
from fathom_lab.audit.verdict_text import documents, labelled_groups, sentence_starts

if TYPE_CHECKING:
    from fathom_rlm.documents import Document, TaskRecord

TRAIN_DOCS = 150  # about 1,000 contested facts (seven per document) to fit on
KEYWORD_ROWS = 500
ATTACKS = (
    "keyword",
    "lexicon",
    "one-pick",
    "sign-system",
    "sign-groups",
    "english-signs",
    "english-reader",
)
"""The keyword solver alone (no verdict read), then the six verdict attacks."""
RELATION_FIRST = frozenset({"lexicon", "one-pick"})
"""The attacks whose solver puts the statements that read as the asked relation first
(`VerdictSolver`): on the first 300 held-out questions at 16K that variant scores higher for
them, the other one for the sign system (the English reader scores the same either way on
`train`)."""


@dataclass
class Fitted:
    """The keyword model and the raters, fitted on `train`, with what the fit chose."""

    model: WordWeights
    raters: dict[str, Rater]
    notes: dict[str, Any] = field(default_factory=dict)

    def solvers(self) -> dict[str, KeywordSolver]:
        out: dict[str, KeywordSolver] = {"keyword": KeywordSolver(self.model)}
        for name, rater in self.raters.items():
            first = name.split(" (")[0] in RELATION_FIRST
            out[name] = VerdictSolver(self.model, rater, relation_first=first)
        return out


def fit(doc_tokens: int, train_docs: int = TRAIN_DOCS, rules: Iterable[str] = ()) -> Fitted:
    """Fit everything on `train` at ``doc_tokens``; ``rules`` are one-pick rules to measure
    besides the one chosen on `train` (each as the attack "one-pick (rule)")."""
    from fathom_rlm.documents import split_tasks

    pairs = [
        (d.text, t.record(d)) for d, t in split_tasks("train", KEYWORD_ROWS, doc_tokens=doc_tokens)
    ]
    model = learn(pairs, max_rows=KEYWORD_ROWS)
    train = documents("train", train_docs, doc_tokens)
    lexicon = fit_lexicon(train)
    one_pick, shares = fit_one_pick(train)
    notes = {
        "train documents": len(train),
        "lexicon pick on train (in-sample)": round(pick_share(lexicon, train), 3),
        "lexicon counts negations": lexicon.flips,
        "one-pick rule chosen on train": one_pick.rule,
        "one-pick rules on train": {k: round(v, 3) for k, v in shares.items()},
    }
    raters: dict[str, Rater] = {"lexicon": lexicon, "one-pick": one_pick}
    raters.update({f"one-pick ({rule})": OnePickRater(rule) for rule in rules})
    raters["sign-system"] = SignSystemRater()
    raters["sign-groups"] = GroupSignRater()
    raters["english-signs"] = GroupSignRater(name="english-signs", known=english_sign)
    raters["english-reader"] = EnglishReader()
    return Fitted(model, raters, notes)


def settled(document: Document, doc: Text, rows: list[TaskRecord]) -> dict[str, int]:
    """Per kind of decision ("sentence", "triple"): the most questions of ``rows`` one decision
    settles (every contested statement a question rests on is followed, true, by that verdict
    sentence or triple); "one_off": the questions resting on a contested statement at all."""
    starts = sentence_starts(doc)
    verdicts = verdicts_of(doc)
    true = {i for g in labelled_groups(document, doc) for i, t in g if t and i in verdicts}
    out: dict[str, int] = {"one_off": 0}
    keys = {name: COUNT_KEYS[name] for name in ("sentence", "triple")}
    counts: dict[str, Counter] = {name: Counter() for name in keys}
    for row in rows:
        rests = {starts[a] for a, _ in row.spans if starts.get(a) in true}
        if not rests:
            continue
        out["one_off"] += 1
        for name, key in keys.items():
            values = {key(verdicts[i]) for i in rests}
            if len(values) == 1:
                counts[name][values.pop()] += 1
    for name in keys:
        out[name] = max(counts[name].values(), default=0)
    return out


@dataclass
class Measurement:
    """Per attack and family, right answers, a list per document; per attack, facts picked; per
    document, what one decision settles."""

    right: dict[str, dict[str, list[list[bool]]]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(list))
    )
    picks: dict[str, list[float]] = field(default_factory=lambda: defaultdict(lambda: [0.0, 0]))
    settled: list[dict[str, int]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for attack, families in self.right.items():
            rows = {}
            for family, per_document in sorted(families.items()):
                hits = [sum(oks) for oks in per_document]
                trials = [len(oks) for oks in per_document]
                k, n = sum(hits), sum(trials)
                rows[family] = {
                    "n": n,
                    "correct": round(k / n, 3),
                    "upper95": round(clustered_upper(hits, trials), 3),
                }
            if attack in self.picks:
                total, n = self.picks[attack]
                rows["pick"] = {"facts": n, "share": round(total / max(1, n), 3)}
            out[attack] = rows
        out["settled"] = {
            kind: {
                "max": max((s[kind] for s in self.settled), default=0),
                "mean": round(sum(s[kind] for s in self.settled) / max(1, len(self.settled)), 2),
            }
            for kind in ("sentence", "triple", "one_off")
        }
        out["documents"] = len(self.settled)
        return out


def measure(
    fitted: Fitted,
    split: str,
    n: int,
    doc_tokens: int,
    progress: Callable[[str], None] | None = None,
    attacks: Iterable[str] | None = None,
) -> Measurement:
    """Every attack (or those named in ``attacks``) on the first ``n`` questions of ``split``,
    one document at a time."""
    from fathom_rlm.documents import matches_gold, split_tasks

    solvers = fitted.solvers()
    if attacks is not None:
        unknown = set(attacks) - set(solvers)
        if unknown:
            raise ValueError(f"unknown attacks: {sorted(unknown)}")
        solvers = {name: solvers[name] for name in attacks}
    result = Measurement()
    pairs = split_tasks(split, n, doc_tokens=doc_tokens)  # type: ignore[arg-type]
    for k, (_, group) in enumerate(itertools.groupby(pairs, key=lambda p: p[0].seed)):
        tasks = list(group)
        document = tasks[0][0]
        doc = Text(document.text)
        rows = [t.record(document) for _, t in tasks]
        for name, solver in solvers.items():
            oks: dict[str, list[bool]] = defaultdict(list)
            for row in rows:
                guess = solver.answer(doc, row.family, row.question)
                oks[row.family].append(
                    guess is not None and matches_gold(guess, row.answer, row.aliases)
                )
            for family, family_oks in oks.items():
                result.right[name][family].append(family_oks)
            if isinstance(solver, VerdictSolver):
                total, facts = document_picks(solver.ratings(doc), document, doc)
                result.picks[name][0] += total
                result.picks[name][1] += facts
        result.settled.append(settled(document, doc, rows))
        if progress is not None:
            first = next(iter(solvers))
            answered = sum(len(oks) for v in result.right[first].values() for oks in v)
            progress(f"document {k + 1}: {answered} questions")
    return result


def markdown(summary: dict[str, Any], families: Iterable[str]) -> str:
    """One table row per attack: correct (95% upper end) per family, then the fact pick."""
    families = list(families)
    lines = [
        "| attack | " + " | ".join(families) + " | pick |",
        "|---" * (len(families) + 2) + "|",
    ]
    for attack, rows in summary.items():
        if attack not in ATTACKS and not attack.startswith("one-pick"):
            continue
        cells = []
        for family in families:
            r = rows.get(family)
            cells.append(
                "-" if r is None else f"{r['correct']:.2f} ({r['upper95']:.2f}), n={r['n']}"
            )
        pick = rows.get("pick")
        cells.append("-" if pick is None else f"{pick['share']:.3f} of {pick['facts']}")
        lines.append(f"| {attack} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m fathom_lab.audit.verdict_audit", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--split", default="heldout", choices=("train", "eval", "heldout"))
    parser.add_argument("--n", type=cli.integer(1), default=1000, help="questions to answer")
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=16_000)
    parser.add_argument("--train-docs", type=cli.integer(1), default=TRAIN_DOCS)
    parser.add_argument(
        "--one-pick-rules",
        type=cli.names(ONE_PICK_RULES, "one-pick rules"),
        default=[],
        help="one-pick rules to measure besides the one chosen on train",
    )
    return parser


if __name__ == "__main__":
    import json

    from fathom_rlm.documents.tasks.intent import FAMILIES

    args = build_parser().parse_args()
    fitted = fit(args.doc_tokens, args.train_docs, args.one_pick_rules)
    print(json.dumps(fitted.notes), file=sys.stderr, flush=True)
    found = measure(
        fitted, args.split, args.n, args.doc_tokens, lambda s: print(s, file=sys.stderr, flush=True)
    )
    summary = found.summary()
    print(json.dumps({"fit": fitted.notes, **summary}, indent=1))
    print(markdown(summary, FAMILIES))
