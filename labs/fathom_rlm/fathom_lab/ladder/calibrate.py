"""Measure the oracle costs of `fathom_rlm.rewards.ORACLE_FIXED_TOKENS` from the reference.

    uv run python -m fathom_lab.ladder.calibrate --n 60 --doc-tokens 200000

Runs the depth-matched reference policy (`fathom-reference`) on the first `--n` rows of `train`
through the real loop, sandbox and reward, and prints, per family, the median of what it spent
(`budget_tokens`, every model token) minus the reading every plan must do (the part of
`oracle_tokens` that is not fixed), over the rollouts it answered correctly. Paste the printed
table into the reward config.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
from collections.abc import Sequence
from typing import Any

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS
from fathom_rlm.agent import ChatReply, RolloutCaps, run_rollout
from fathom_rlm.documents import TaskRecord, build_split, get_document
from fathom_rlm.rewards import RewardConfig, oracle_tokens, score_rollout

from envtools import cli
from fathom_lab.ladder.planner import FathomReference


async def measure(rows: Sequence[TaskRecord]) -> dict[str, list[float]]:
    """Per family, the fixed part of each correct reference rollout's cost."""
    policy = FathomReference()

    async def chat(messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        result = await policy.respond(messages, tools)
        return ChatReply(result.message, result.usage)

    reading_only = RewardConfig(oracle_fixed_tokens={}, default_fixed_tokens=0)
    out: dict[str, list[float]] = {}
    for row in rows:
        text = get_document(row.seed, row.doc_tokens).text
        record = await run_rollout(text, row.question, chat, RolloutCaps())
        scores = score_rollout(record, row, document=text)
        if scores["correctness"] == 1.0:
            fixed = scores["budget_tokens"] - oracle_tokens(row, reading_only)
            out.setdefault(row.family, []).append(fixed)
    return out


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m fathom_lab.ladder.calibrate", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--n", type=cli.integer(1), default=60, help="train rows (default %(default)s)"
    )
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=200_000)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    rows = build_split("train", args.n, doc_tokens=args.doc_tokens)
    costs = asyncio.run(measure(rows))
    if not costs:
        print("the reference answered no row correctly", file=sys.stderr)
        return 1
    print("ORACLE_FIXED_TOKENS = {")
    for family, values in sorted(costs.items()):
        median = int(round(statistics.median(values), -2))
        print(f'    "{family}": {median:_},  # median of {len(values)} correct rollouts')
    print("}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
