"""The strongest per-document attack on the verdicts, given every advantage: learn every part's
sign from "exactly one statement per contested fact stands".

A contested fact has one true statement among six, each followed by its own verdict, whose stand
is the product of three signs: the first verb, the second verb and the outcome (verdicts.py in
the generator). No lexicon learned on `train` knows a `heldout` verb or outcome, but within one
document the parts recur, and every contested fact is a constraint. This solver searches for the
signs (`verdict_attacks.solve_exactly_one`: simulated annealing with restarts) under which the
most facts have exactly one standing statement, then picks each fact's standing statement.

It is handed what no code-only attacker has, so its number is an upper bound on the attack: the
statements of each fact grouped as the generator annotated them (`labelled_groups`), never the
classes. ``--contest-every-fact`` renders every one-off fact contested, the `fathom-docs-10`
layout, to show why a document contests only its questions' facts (contested.py); ``--pool``
solves the signs over all the documents at once, which a policy, reading one document per
episode, cannot do (docs/reward_audit.md, "Across documents").

``--known-verbs`` and ``--known-outcomes`` hand the search the true signs of a share of the
split's verbs and of its outcomes (the same words in every document, as a fixed word list would
know them), standing for what general English tells an attacker: "upheld" backs, "the appeal"
challenges. The search then has only the other parts to find; this measures how much outside
knowledge of word signs the verdicts can take (docs/reward_audit.md, "Code that knows
English").

Run: ``python -m fathom_lab.audit.sign_solver --split heldout --doc-tokens 16000 --docs 150``
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
from fathom_rlm.documents import generate_document, get_document
from fathom_rlm.documents.seeds import SPLIT_SEED_BASE
from fathom_rlm.documents.verdicts import verdict_parts

from envtools import cli
from envtools.stats import clustered_upper
from fathom_lab.audit.keyword_solver import Text
from fathom_lab.audit.verdict_attacks import solve_exactly_one, verdicts_of
from fathom_lab.audit.verdict_text import labelled_groups

STEPS, RESTARTS = 6000, 8


@dataclass(frozen=True)
class Fact:
    """One contested fact's statements: each verdict's three part ids, and which one is true."""

    parts: tuple[tuple[int, int, int], ...]
    true_index: int


def document_facts(
    seed: int, doc_tokens: int, ids: dict[str, int] | None = None, every_fact: bool = False
) -> list[Fact]:
    """The contested facts of a document, their verdicts cut into part ids (``ids``: word ->
    id, shared across documents when given)."""
    if every_fact:
        document = generate_document(seed, doc_tokens, contest_every_fact=True)
    else:
        document = get_document(seed, doc_tokens)
    doc = Text(document.text)
    verdicts = verdicts_of(doc)
    ids = {} if ids is None else ids
    facts = []
    for group in labelled_groups(document, doc):
        if not all(i in verdicts for i, _ in group):
            continue
        parts = []
        for i, _ in group:
            v = verdicts[i]
            words = ("v:" + v.first, "v:" + v.second, "o:" + v.outcome)
            parts.append(tuple(ids.setdefault(w, len(ids)) for w in words))
        facts.append(Fact(tuple(parts), [true for _, true in group].index(True)))
    return facts


def known_signs(split: str, verbs: float, outcomes: float) -> dict[str, int]:
    """The true signs of a fixed share of ``split``'s verbs and of its outcomes, keyed as
    `document_facts` keys parts ("v:upheld", "o:appeal"). Which words are known is one draw per
    split, so every document meets the same list."""
    parts, rng, known = verdict_parts(split), random.Random(f"known/{split}"), {}
    for prefix, share, classes in (
        ("v:", verbs, ((parts.backing, 1), (parts.rejecting, -1))),
        ("o:", outcomes, ((parts.outcomes, 1), (parts.challenges, -1))),
    ):
        # A verb phrase ("sided with") fills a slot with either of its words.
        words = sorted({(w, sign) for table, sign in classes for e in table for w in e.split()})
        words = [(w, sign) for w, sign in words if w != "the"]
        rng.shuffle(words)
        known |= {prefix + w: sign for w, sign in words[: round(share * len(words))]}
    return known


def solve(facts: list[Fact], seed: int = 0, known: dict[int, int] | None = None) -> np.ndarray:
    """Signs (+1/-1) per part id that leave exactly one standing statement in the most facts;
    ``known`` fixes some part ids' signs."""
    rows = [p for f in facts for p in f.parts]
    owner = np.repeat(np.arange(len(facts)), [len(f.parts) for f in facts])
    n_parts = 1 + max(i for p in rows for i in p)
    return solve_exactly_one(np.array(rows), owner, n_parts, STEPS, RESTARTS, seed, known)


def pick_accuracy(facts: list[Fact], signs: np.ndarray) -> float:
    """Expected share of facts answered right: a random standing statement (any, if none)."""
    total = 0.0
    for fact in facts:
        standing = [j for j, p in enumerate(fact.parts) if np.prod(signs[list(p)]) > 0]
        pool = standing or list(range(len(fact.parts)))
        total += (fact.true_index in pool) / len(pool)
    return total / len(facts)


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m fathom_lab.audit.sign_solver",
        description="Learn each verdict part's sign per document; score per contested fact.",
    )
    parser.add_argument("--split", choices=tuple(SPLIT_SEED_BASE), default="heldout")
    parser.add_argument("--doc-tokens", type=cli.integer(4_000), default=16_000)
    parser.add_argument("--docs", type=cli.integer(1), default=10)
    parser.add_argument(
        "--contest-every-fact",
        action="store_true",
        help="contest every one-off fact, as fathom-docs-10 did",
    )
    parser.add_argument(
        "--pool", action="store_true", help="one sign table for all the documents at once"
    )
    for slot in ("verbs", "outcomes"):
        parser.add_argument(
            f"--known-{slot}",
            type=cli.number(0.0, 1.0),
            default=0.0,
            metavar="SHARE",
            help=f"hand the search the true signs of this share of the split's {slot}",
        )
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    first = SPLIT_SEED_BASE[args.split]
    known = known_signs(args.split, args.known_verbs, args.known_outcomes)

    def given(ids: dict[str, int]) -> dict[int, int]:
        """The known signs of the words among the part ids ``ids``."""
        return {ids[w]: sign for w, sign in known.items() if w in ids}

    shared: dict[str, int] = {}
    per_document = []
    for seed in range(first, first + args.docs):
        ids = shared if args.pool else {}
        per_document.append(
            (document_facts(seed, args.doc_tokens, ids, args.contest_every_fact), ids)
        )
    pooled = (
        solve([f for fs, _ in per_document for f in fs], known=given(shared)) if args.pool else None
    )
    hits = [
        pick_accuracy(fs, solve(fs, known=given(ids)) if pooled is None else pooled) * len(fs)
        for fs, ids in per_document
        if fs
    ]
    sizes = [len(fs) for fs, _ in per_document if fs]
    n = sum(sizes)
    layout = "every one-off fact contested" if args.contest_every_fact else "the question plan"
    scope = "one table for all documents" if args.pool else "one table per document"
    handed = (
        f"; signs given: {args.known_verbs:.0%} of verbs, {args.known_outcomes:.0%} of outcomes"
    )
    print(
        f"{args.split} {args.doc_tokens} tokens, {args.docs} documents ({layout}; {scope}"
        f"{handed if known else ''}), {n} contested facts: pick accuracy {sum(hits) / n:.3f} "
        f"(95% upper {clustered_upper(hits, sizes):.3f}, documents resampled; chance 1/6)"
    )


if __name__ == "__main__":
    main()
