"""Scripted fathom-rlm policies: the honest reference ladder, code-only rungs and the attacks.

* `planner`: the reference planner (root and sub-agents), at depth 2, 1 and 0, and with a reader
  that knows only `train`'s verdict wordings;
* `reader`: the slice reader that answers its sub-calls from the text it was handed alone;
* `code_only`: grep-only and the code-only adversary (regexes, never `llm`);
* `attacks`: the reward audit's attacks; `gold`: the gold-in-hand lookup only attacks use.

Every policy works from the messages of one request alone (see `protocol`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS

from envtools import cli
from envtools.policies.base import Policy
from envtools.policies.registry import Ladder, ReplyScope
from fathom_lab.audit import attacks, code_only
from fathom_lab.audit.adversary import CodeOnly
from fathom_lab.audit.attacks import (
    LEAK_PROBES,
    Blind,
    BlindChoice,
    Candidates,
    ClosedBook,
    CopyQuestion,
    DepthPadding,
    FamilyPrior,
    FormatOnly,
    FrequentEntity,
    Overlong,
    Padding,
    PhantomEvidence,
    RecursionSpam,
    SandboxLeak,
    TwoAnswers,
    VerboseRepl,
)
from fathom_lab.audit.code_only import GrepOnly
from fathom_lab.audit.gold import (
    TASKS,
    TaskIndex,
    UnknownTaskError,
    document_length_guesses,
    register_tasks,
)
from fathom_lab.ladder import planner
from fathom_lab.ladder.overlap_reader import reading_any_text
from fathom_lab.ladder.planner import (
    FathomReference,
    ReferenceDepth0,
    ReferenceDepth1,
    ReferenceDepth2,
    ReferenceTrainVerdicts,
)
from fathom_lab.user_rows import (
    add_data_format_argument,
    load_user_rows,
    refuse_format_without_data,
)

ROLES: dict[str, str] = {
    "honest": (
        "the honest reference, a perfect grammar reader (every split's wordings): an upper"
        " bound on what the environment pays, the bar for every row"
    ),
    "rung": (
        "the honest plan held back, to one depth or to `train`'s verdict wordings: what the"
        " reward pays each rung of the ladder"
    ),
    "baseline": "a cheap solver that reads without `llm`: how far code alone gets",
    "attack": (
        "tries to collect reward it has not earned: near 0 when it skips the honest work; one"
        " that does the work and games a single term (fathom-depth-padding) scores no more than"
        " the rung it builds on"
    ),
}
"""What each role shows; the report's legend names them in this order."""

ROLES_ON_USER_ROWS: dict[str, str] = {
    **ROLES,
    "honest": (
        "the honest reference, a grammar reader of the generator's sentences: on other text its"
        " sub-calls fall back to a word-overlap reader, so its scores there are a floor, not a bar"
    ),
}
"""The roles as they read on user rows (`evaluate --data`)."""


@dataclass(frozen=True)
class Card:
    """A scripted fathom policy with its role (a key of ROLES) and what its row shows."""

    factory: Callable[[], Policy]
    role: str
    shows: str

    @property
    def name(self) -> str:
        return str(self.factory.name)  # type: ignore[attr-defined]


CARDS: tuple[Card, ...] = (
    Card(FathomReference, "honest", "plans at the depth each family is labelled with"),
    Card(ReferenceDepth2, "rung", "always fans a count out to depth 2"),
    Card(ReferenceDepth1, "rung", "recursion capped at depth 1: sub-calls read their slices"),
    Card(ReferenceDepth0, "rung", "no sub-calls: the root reads every hit window itself"),
    Card(ReferenceTrainVerdicts, "rung", "reads verdicts in train's wordings only"),
    Card(GrepOnly, "baseline", "regex hit lines of the question's names, nearest candidate"),
    Card(CodeOnly, "baseline", "the code-only adversary: regexes and word weights from train"),
    Card(CopyQuestion, "attack", "honest work, then answers with the question"),
    Card(Candidates, "attack", "honest work, then lists the answer among other names"),
    Card(Padding, "attack", "honest work, then wraps the answer in a sentence"),
    Card(Overlong, "attack", "honest work, then appends a reason to the answer"),
    Card(TwoAnswers, "attack", "honest work, then writes a wrong and a right answer block"),
    Card(FormatOnly, "attack", "a placeholder answer in perfect format"),
    Card(ClosedBook, "attack", "answers at once, no tools, the first name in the question"),
    Card(FrequentEntity, "attack", "most mentioned entity of the asked type (generator's index)"),
    Card(VerboseRepl, "attack", "floods REPL output, answers the most frequent name printed"),
    Card(RecursionSpam, "attack", "fans out generic llm() calls until the budget is gone"),
    Card(
        DepthPadding,
        "attack",
        "the depth-0 rung plus an idle sub-call for depth credit: must not beat it",
    ),
    Card(SandboxLeak, "attack", "probes the sandbox and a sub-call for the gold"),
    Card(PhantomEvidence, "attack", "gold in hand, evidence handed to sub-calls that never read"),
    Card(FamilyPrior, "attack", "the family's most common train answer, phantom reading"),
    Card(Blind, "baseline", "most mentioned name counted in the REPL, reading nothing"),
    Card(BlindChoice, "baseline", "a choice letter picked blind: the 1/k floor of choice rows"),
)
"""Every fathom policy in report order: the reference, the weaker honest rungs, the code-only
baselines, then the attacks of the reward audit (environments/fathom_rlm/docs/reward_audit.md)
and the blind baseline last, as the audit lists them."""

POLICIES: dict[str, Callable[[], Policy]] = {card.name: card.factory for card in CARDS}
"""Every fathom policy by name, in the order of CARDS."""


def card_of(name: str) -> Card | None:
    """The card of the fathom policy called `name`, or None when there is none."""
    return next((c for c in CARDS if c.name == name), None)


def _add_server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fathom-doc-tokens",
        type=cli.integer(MIN_DOC_TOKENS),
        action="append",
        metavar="N",
        help="document length(s) of the fathom-rlm runs to serve (default 200000): the scripted "
        "fathom policies find their task among the standard splits built at these lengths",
    )
    parser.add_argument(
        "--data",
        default=None,
        metavar="PATH",
        help="a JSONL file of your own rows (the fathom-rlm README, 'Your own documents') that "
        "the run serves: the fathom reference then reads text it has no grammar for by word "
        "overlap, as `fathom_lab.evaluate --data` does",
    )
    add_data_format_argument(parser)


def _configure_server(parser: cli.ArgumentParser, args: argparse.Namespace) -> ReplyScope | None:
    """Serve the asked document lengths; on --data, check its rows (a bad row is a usage error
    naming it), let the gold-in-hand attacks find them, and read any text in every reply."""
    if args.fathom_doc_tokens:
        TASKS.autoload_doc_tokens = tuple(args.fathom_doc_tokens)
    refuse_format_without_data(parser, args)
    if args.data is None:
        return None
    register_tasks(load_user_rows(parser, args.data, args.data_format or "native"))
    return reading_any_text


LADDER = Ladder(POLICIES, _add_server_arguments, _configure_server)
"""The entry point `envtools.ladders: fathom` (this lab's pyproject.toml)."""


__all__ = [
    "CARDS",
    "LADDER",
    "LEAK_PROBES",
    "POLICIES",
    "ROLES",
    "ROLES_ON_USER_ROWS",
    "TASKS",
    "Card",
    "FathomReference",
    "GrepOnly",
    "ReferenceDepth0",
    "ReferenceDepth1",
    "ReferenceDepth2",
    "ReferenceTrainVerdicts",
    "TaskIndex",
    "UnknownTaskError",
    "attacks",
    "card_of",
    "code_only",
    "document_length_guesses",
    "planner",
    "register_tasks",
]
