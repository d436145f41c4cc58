"""Design probe: could a verdict grounded in the world stop the group-constraint attack?

The group-constraint attack (`group_constraint`) wins because the verdict on each one-off
statement is a property of the sentence after it: in every subject's group exactly one follower
is a dismissal, so the dismissal wordings are found without reading them. A verdict that is a
claim about the world instead ("W, then living in Tarn, vouched for it"), worded alike for true
and false statements, has no such marker; what stops code then is how well code can check the
claim. This probe measures that on today's documents before any generator is changed: it draws
the claims a redesigned generator would write (from the world, as the generator would) and
checks them with the cheapest code reader of a person's history.

That reader takes the sentences about a person (`Text.about`: full name, formal name, learned
alias, a leading pronoun after the person), drops those with a negation cue, and keeps the last
place each names, in document order. Its estimates before a chapter are the last place kept
(where the person lives) and the number of changes of place (how often they have moved). For the
counts it also learns, on `train` documents, how the true count is spread for each estimate, and
picks the claim that is likeliest under its estimate; for places it picks a claim its estimate
matches. Ties are shared out evenly, so a group scores the probability that the true claim is
picked.

Designs, each a group of one true claim and five false ones:

* ``witness_home``: the statement's follower names a witness and where the witness lived when
  the statement was written (its chapter); a false one names another home of the same witness.
* ``witness_moves``: the witness's number of moves by then; a false one is off by one or two.
* ``subject_home``: the six statements about one person sit in six chapters, each followed by
  where that person lived at the time; a false one names another of the person's homes.
* ``subject_moves``: likewise, with the person's number of moves by then.

Run: `uv run python -m envtools.policies.fathom.verdict_probe --doc-tokens 16000 --docs 20`
(held-out documents; calibration on as many `train` documents). One in six is chance.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter, defaultdict

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS
from fathom_rlm.documents import Document, get_document, split_seeds
from fathom_rlm.documents.grammar import RETRACTED

from envtools import cli
from envtools.policies.fathom.keyword_solver import NEGATION_CUES, Text

DESIGNS = ("witness_home", "witness_moves", "subject_home", "subject_moves")
GROUP = 6  # one true claim and five false ones, as per one-off fact today
_OFFSETS = (-2, -1, 1, 2)


class History:
    """The code reader's view of every person's moves in one document."""

    def __init__(self, doc: Document) -> None:
        text = Text(doc.text)
        self.starts = [ch.start for ch in doc.chapters]
        self.places: dict[int, list[tuple[int, str]]] = {}
        for p in doc.world.people:
            kept = []
            for i in text.about(p.name):
                at, sentence = text.sentences[i]
                places = text.candidates("place", sentence)
                if places and not NEGATION_CUES.search(sentence.lower()):
                    kept.append((at, places[-1]))
            self.places[p.id] = kept

    def before(self, person: int, chapter: int) -> tuple[str | None, int]:
        """(last place kept, changes of place) in the text before ``chapter``."""
        seen = [place for at, place in self.places[person] if at < self.starts[chapter]]
        moves = sum(1 for a, b in itertools.pairwise(seen) if a != b)
        return (seen[-1] if seen else None), moves


def settled_in(doc: Document, person: int, chapter: int) -> bool:
    """The person has a home by ``chapter`` and does not move during it."""
    p = doc.world.people[person]
    moving = any(chapter <= t < chapter + 1 for t, _ in p.residence)
    return not moving and doc.world.residence_at(person, chapter) is not None


def home_at(doc: Document, person: int, chapter: int) -> str:
    return doc.world.places[doc.world.residence_at(person, chapter)].name


def moves_before(doc: Document, person: int, chapter: int) -> int:
    return sum(1 for t, _ in doc.world.people[person].residence[1:] if t < chapter)


def _false_home(doc: Document, person: int, chapter: int, rng: random.Random) -> str | None:
    homes = {doc.world.places[pl].name for _, pl in doc.world.people[person].residence}
    others = sorted(homes - {home_at(doc, person, chapter)})
    return rng.choice(others) if others else None


def _false_moves(doc: Document, person: int, chapter: int, rng: random.Random) -> int:
    true = moves_before(doc, person, chapter)
    return rng.choice([true + o for o in _OFFSETS if true + o >= 0])


Claim = tuple[int, int, object, bool]  # (person, chapter, claimed value, true?)


def claim_groups(doc: Document, design: str, rng: random.Random) -> list[list[Claim]]:
    """The groups of claims ``design`` would write into ``doc``: one per one-off fact (of a
    person, for the subject designs)."""
    counts = design.endswith("moves")
    value = moves_before if counts else home_at
    false = _false_moves if counts else _false_home
    chapters = range(1, len(doc.chapters))
    groups = []
    for ev in doc.world.events:
        if ev.kind not in RETRACTED:
            continue
        if design.startswith("witness"):
            c = ev.chapter
            people = [p.id for p in doc.world.people if c > 0 and settled_in(doc, p.id, c)]
            if len(people) < GROUP:
                continue
            slots = [(pid, c) for pid in rng.sample(people, GROUP)]
        else:
            if ev.kind not in ("birth", "mentor"):
                continue
            settled = [c for c in chapters if settled_in(doc, ev.subject, c)]
            if len(settled) < GROUP:
                continue
            slots = [(ev.subject, c) for c in rng.sample(settled, GROUP)]
        group = [(*slots[0], value(doc, *slots[0]), True)]
        for person, c in slots[1:]:
            wrong = false(doc, person, c, rng)
            if wrong is not None:
                group.append((person, c, wrong, False))
        if len(group) == GROUP:
            groups.append(group)
    return groups


def _documents(split: str, doc_tokens: int, n: int):
    for seed in list(split_seeds(split))[:n]:
        yield get_document(seed, doc_tokens=doc_tokens)


def learn_counts(doc_tokens: int, n: int) -> dict[int, Counter[int]]:
    """On ``n`` train documents: estimated moves -> how often each true count goes with it."""
    table: dict[int, Counter[int]] = defaultdict(Counter)
    for doc in _documents("train", doc_tokens, n):
        history = History(doc)
        for p in doc.world.people:
            for c in range(1, len(doc.chapters)):
                if settled_in(doc, p.id, c):
                    table[history.before(p.id, c)[1]][moves_before(doc, p.id, c)] += 1
    return table


def _fit(claim: Claim, history: History, table: dict[int, Counter[int]]) -> float:
    person, chapter, value, _ = claim
    home, moves = history.before(person, chapter)
    if isinstance(value, str):
        return float(home == value)
    seen = table.get(moves, Counter())
    return math.log((seen[value] + 1) / (sum(seen.values()) + 10))


def pick_rate(groups: list[list[Claim]], history: History, table) -> float:
    """Mean probability that the best-fitting claim (ties shared) is the true one."""
    total = 0.0
    for group in groups:
        fits = [_fit(claim, history, table) for claim in group]
        best = [claim for claim, f in zip(group, fits, strict=True) if f == max(fits)]
        total += sum(claim[3] for claim in best) / len(best)
    return total / max(1, len(groups))


def probe(doc_tokens: int, docs: int, designs=DESIGNS) -> dict[str, dict[str, float]]:
    """Per design: groups and the attack's pick rate over ``docs`` held-out documents."""
    table = learn_counts(doc_tokens, docs)
    totals = {d: [0.0, 0] for d in designs}
    for doc in _documents("heldout", doc_tokens, docs):
        history = History(doc)
        for design in designs:
            groups = claim_groups(doc, design, random.Random(f"{design}:{doc.seed}"))
            totals[design][0] += pick_rate(groups, history, table) * len(groups)
            totals[design][1] += len(groups)
    return {d: {"groups": n, "pick_rate": s / max(1, n)} for d, (s, n) in totals.items()}


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.policies.fathom.verdict_probe", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=16_000)
    parser.add_argument(
        "--docs", type=cli.integer(1), default=20, help="held-out (and train) documents"
    )
    return parser


if __name__ == "__main__":
    import json

    args = build_parser().parse_args()
    print(json.dumps(probe(args.doc_tokens, args.docs), indent=1))
