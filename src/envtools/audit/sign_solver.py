"""A per-document attack on the verdicts: learn every part's sign from the document itself.

Each one-off fact has one true statement among several retracted ones, each followed by its own
verdict, whose stand is the product of three signs: the first verb, the second verb and the
outcome (verdicts.py in the generator). No lexicon learned on `train` knows a `heldout` verb or
outcome, and no single part or pair of parts is more common in either class. But within one
document the parts recur (a split has 20 verbs and 24 outcomes, a 200K-token document about
1,500 verdicts), and every fact gives a constraint: exactly one of its statements stands. This
solver searches for the signs (simulated annealing over the document's verbs and outcomes, with
restarts) that satisfy the most facts, then answers each fact with the statement whose verdict
comes out standing.

What it is handed, so the number is an upper bound on this kind of attack: the statements of
each fact, grouped as the generator annotated them (a code-only attacker groups by the subject's
name and the kinds of values, which the reward audit's solvers do from text), and each
verdict's parts cut out by position (`{...} {verb} {what}; {...}, {...} {verb} the {outcome}.`:
the second verb and the outcome are the last words; the first verb is the word before the
first-ruling object). It never reads a sign, a verdict table or a class.

Run: ``python -m envtools.audit.sign_solver --split heldout --doc-tokens 16000 --docs 30``
"""

from __future__ import annotations

import itertools
import math
import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from fathom_rlm.documents import get_document
from fathom_rlm.documents.grammar import RETRACTED
from fathom_rlm.documents.seeds import SPLIT_SEED_BASE

from envtools import cli

_VERDICT = re.compile(r"(?P<first>[^;]+); [^,]+, .+ (?P<verb2>\S+) the (?P<outcome>\S+)\.")
# Words that sit before "the" inside the first ruling's subject ("Not one of the elders").
_NOT_VERBS = frozenset({"of", "at", "in", "nor", "neither", "what"})
_STEPS, _RESTARTS = 6000, 8


@dataclass(frozen=True)
class Fact:
    """One one-off fact's statements: each verdict's three part ids, and which one is true."""

    parts: tuple[tuple[int, int, int], ...]
    true_index: int


def first_verb(first_ruling: str) -> str | None:
    """The first ruling's verb: the word right before its object ("the ...", "that ...",
    "what ..."), skipping words that sit inside the ruling's subject."""
    words = first_ruling.split()
    for here, after in itertools.pairwise(words[1:]):
        if after in ("the", "that", "what") and here.lower() not in _NOT_VERBS:
            return here
    return None


def document_facts(seed: int, doc_tokens: int) -> list[Fact]:
    """The one-off facts of a document, their verdicts cut into part ids."""
    doc = get_document(seed, doc_tokens)
    groups: dict[tuple[str, str], list[tuple[str, bool]]] = defaultdict(list)
    for fact in doc.facts.values():
        if fact.relation in RETRACTED:
            end = fact.spans[-1][1]
            verdict = doc.text[end + 1 :].split(".", 1)[0] + "."
            groups[fact.relation, fact.subject.split()[-1].lower()].append((verdict, True))
    for negative in doc.distractors:
        if negative.kind == "retracted":
            a, b = negative.spans[-1]
            key = (negative.relation, negative.subject.split()[-1].lower())
            groups[key].append((doc.text[a:b], False))
    ids: dict[str, int] = {}
    facts = []
    for statements in groups.values():
        parts = []
        for verdict, _ in statements:
            m = _VERDICT.fullmatch(verdict)
            verb1 = first_verb(m["first"]) if m else None
            if m is None or verb1 is None:
                break
            words = ("v:" + verb1, "v:" + m["verb2"], "o:" + m["outcome"])
            parts.append(tuple(ids.setdefault(w, len(ids)) for w in words))
        truths = [t for _, t in statements]
        if len(parts) == len(statements) and truths.count(True) == 1:
            facts.append(Fact(tuple(parts), truths.index(True)))
    return facts


def solve(facts: list[Fact], seed: int = 0) -> np.ndarray:
    """Signs (+1/-1) per part id that leave exactly one standing statement in the most facts."""
    n_parts = 1 + max(i for f in facts for p in f.parts for i in p)
    width = max(len(f.parts) for f in facts)
    idx = np.zeros((len(facts), width, 3), dtype=int)
    mask = np.zeros((len(facts), width), dtype=bool)
    for i, fact in enumerate(facts):
        idx[i, : len(fact.parts)] = fact.parts
        mask[i, : len(fact.parts)] = True

    def misfit(signs: np.ndarray) -> int:
        standing = ((signs[idx].prod(-1) > 0) & mask).sum(1)
        return int(np.abs(standing - 1).sum())

    rng = np.random.default_rng(seed)
    best, best_misfit = None, math.inf
    for _ in range(_RESTARTS):
        signs = rng.choice([-1, 1], n_parts)
        energy, temperature = misfit(signs), 2.0
        for _ in range(_STEPS):
            k = rng.integers(n_parts)
            signs[k] *= -1
            trial = misfit(signs)
            if trial <= energy or rng.random() < math.exp((energy - trial) / temperature):
                energy = trial
            else:
                signs[k] *= -1
            temperature = max(0.05, temperature * 0.999)
        if energy < best_misfit:
            best, best_misfit = signs.copy(), energy
        if best_misfit == 0:
            break
    assert best is not None
    return best


def pick_accuracy(facts: list[Fact], signs: np.ndarray) -> float:
    """Expected share of facts answered right: a random standing statement (any, if none)."""
    total = 0.0
    for fact in facts:
        standing = [j for j, p in enumerate(fact.parts) if np.prod(signs[list(p)]) > 0]
        pool = standing or list(range(len(fact.parts)))
        total += (fact.true_index in pool) / len(pool)
    return total / len(facts)


def wilson_upper(hits: float, n: int, z: float = 1.96) -> float:
    """Upper end of the 95% Wilson interval of a share ``hits / n``."""
    p = hits / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre + spread) / (1 + z * z / n)


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.audit.sign_solver",
        description="Learn each verdict part's sign per document; score per one-off fact.",
    )
    parser.add_argument("--split", choices=tuple(SPLIT_SEED_BASE), default="heldout")
    parser.add_argument("--doc-tokens", type=cli.integer(4_000), default=16_000)
    parser.add_argument("--docs", type=cli.integer(1), default=10)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    first = SPLIT_SEED_BASE[args.split]
    scores, n = [], 0
    for seed in range(first, first + args.docs):
        facts = document_facts(seed, args.doc_tokens)
        scores.append(pick_accuracy(facts, solve(facts)) * len(facts))
        n += len(facts)
    hits = sum(scores)
    print(
        f"{args.split} {args.doc_tokens} tokens, {args.docs} documents, {n} one-off facts: "
        f"pick accuracy {hits / n:.3f} (95% upper {wilson_upper(hits, n):.3f}; chance 1/6)"
    )


if __name__ == "__main__":
    main()
