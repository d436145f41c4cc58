"""Wall time per fathom rollout with the map over sections asked at once (`llm_batch`) against
one sub-call after another (`llm` in a loop), behind an endpoint of fixed latency.

    uv run python labs/fathom_rlm/benchmarks/llm_batch.py --out docs/results/fathom-llm-batch.md

The scripted reference plays the model on aggregation questions (a count over a chapter range:
the question family whose cost is a map of sub-calls). Every model call, the root's and each
sub-call's, waits `--latency` seconds before the policy answers, as a remote endpoint would. The
two variants differ only in that one cell; both must earn the same rewards. Rollouts run one at
a time, so each wall time is one rollout's alone.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from fathom_lab import policies as fathom
from fathom_lab.ladder.planner import FathomReference
from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS
from fathom_rlm.agent import ChatReply, RolloutCaps, run_rollout
from fathom_rlm.documents import TaskRecord, get_document, make_tasks
from fathom_rlm.rewards import score_rollout
from fathom_rlm.sandbox import shutdown_fork_servers, warm_up

from envtools import cli
from envtools.measured import measured_by

COMMAND = "uv run python labs/fathom_rlm/benchmarks/llm_batch.py"


class OneAfterAnother(FathomReference):
    batch = False


async def rollout(policy: FathomReference, row: TaskRecord, latency: float) -> dict[str, Any]:
    async def chat(messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        await asyncio.sleep(latency)
        result = await policy.respond(messages, tools)
        return ChatReply(result.message, result.usage)

    text = get_document(row.seed, row.doc_tokens).text
    started = time.perf_counter()
    record = await run_rollout(text, row.question, chat, RolloutCaps())
    wall = time.perf_counter() - started
    scores = score_rollout(record, row, document=text)
    return {"wall": wall, "sub_calls": record.llm_calls, "reward": scores["reward"]}


def aggregation_rows(doc_tokens: int, n: int) -> list[TaskRecord]:
    rows: list[TaskRecord] = []
    seed = 101
    while len(rows) < n:
        document = get_document(seed, doc_tokens)
        rows += [r for r in make_tasks(document, 40) if r.family == "aggregation"]
        seed += 1
    return rows[:n]


def page(args: Any, rows: list[TaskRecord], runs: dict[str, list[dict[str, Any]]]) -> str:
    def median(name: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[name])

    batched, looped = median("llm_batch", "wall"), median("llm loop", "wall")
    lines = [
        "# fathom-rlm: sub-calls at once (`llm_batch`) against one after another",
        "",
        measured_by(args.command),
        "",
        f"{len(rows)} aggregation questions on {args.doc_tokens:,}-token documents, the scripted "
        f"reference as the model, every model call held {args.latency} s before it is answered "
        "(the endpoint latency). Rollouts one at a time; default caps (at most "
        f"{RolloutCaps().max_parallel_sub_calls} sub-calls of a batch at once).",
        "",
        "| the map over sections | wall s per rollout, median [min, max] | sub-calls, mean | "
        "reward, mean |",
        "|---|---|---|---|",
    ]
    for name, results in runs.items():
        walls = [r["wall"] for r in results]
        lines.append(
            f"| {name} | {statistics.median(walls):.2f} [{min(walls):.2f}, {max(walls):.2f}] | "
            f"{statistics.fmean(r['sub_calls'] for r in results):.1f} | "
            f"{statistics.fmean(r['reward'] for r in results):.3f} |"
        )
    lines += [
        "",
        f"The batch takes {batched / looped:.2f} of the loop's wall time ({looped / batched:.1f}x "
        "faster), on the same sub-calls and rewards.",
        "",
    ]
    return "\n".join(lines)


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog=f"python {COMMAND.split()[-1]}", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=64_000)
    parser.add_argument("--tasks", type=cli.integer(1), default=8)
    parser.add_argument(
        "--latency", type=cli.number(0.0, 60.0), default=0.25, help="seconds per model call"
    )
    parser.add_argument("--out", type=Path, default=None, help="write the results page here")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    args.command = COMMAND + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    rows = aggregation_rows(args.doc_tokens, args.tasks)
    fathom.TASKS.autoload_splits = ()
    fathom.register_tasks(rows)
    warm_up()
    runs: dict[str, list[dict[str, Any]]] = {"llm_batch": [], "llm loop": []}
    try:
        for row in rows:  # the two variants in turn, so load drifts alike on both
            for name, policy in (("llm_batch", FathomReference()), ("llm loop", OneAfterAnother())):
                runs[name].append(asyncio.run(rollout(policy, row, args.latency)))
    finally:
        shutdown_fork_servers()
    text = page(args, rows, runs)
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
