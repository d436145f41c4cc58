"""Environment-side CPU per fathom rollout, with the scripted reference policy as the model.

Usage: uv run python labs/fathom_rlm/benchmarks/fathom_rollout.py [--doc-tokens 200000] [--tasks 30]

"Environment side" is all CPU a rollout costs outside the model: this process (prompts, tool
dispatch and argument checks, sandbox I/O, sub-call bookkeeping, token accounting, scoring) minus
the CPU the scripted policy spends deciding its replies, plus the sandbox fork server (forking)
and every sandbox worker the rollout started (start-up, running the code, exit). Workers are
children of the fork server, which reaps them and reports their CPU with its own; rollouts run
one at a time and every session is closed (its worker has exited) before the rollout ends, so
the difference before and after a rollout is that rollout's.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from typing import Any

from fathom_lab import policies as fathom
from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS
from fathom_rlm.agent import ChatReply, RolloutCaps, run_rollout
from fathom_rlm.documents import TaskRecord, get_document, make_tasks
from fathom_rlm.rewards import score_rollout
from fathom_rlm.sandbox import fork_server_cpu_seconds, shutdown_fork_servers, warm_up

from envtools import cli


async def measure(rows: list[TaskRecord]) -> dict[str, Any]:
    policy = fathom.FathomReference()
    policy_cpu = 0.0

    async def chat(messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        nonlocal policy_cpu
        start = time.process_time()
        result = await policy.respond(messages, tools)
        policy_cpu += time.process_time() - start
        return ChatReply(result.message, result.usage)

    env_cpu: list[float] = []
    parent_cpu: list[float] = []
    sandbox_cpu: list[float] = []
    wall: list[float] = []
    calls: list[int] = []
    rewards: list[float] = []
    for row in rows:
        text = get_document(row.seed, row.doc_tokens).text
        policy_cpu = 0.0
        box0 = fork_server_cpu_seconds()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        record = await run_rollout(text, row.question, chat, RolloutCaps())
        scores = score_rollout(record, row, document=text)
        cpu1, wall1 = time.process_time(), time.perf_counter()
        box = fork_server_cpu_seconds() - box0
        parent_cpu.append(cpu1 - cpu0 - policy_cpu)
        sandbox_cpu.append(box)
        env_cpu.append(parent_cpu[-1] + box)
        wall.append(wall1 - wall0)
        calls.append(record.total_tool_calls + record.llm_calls)
        rewards.append(scores["reward"])

    def ms(values: list[float]) -> float:
        return round(1000 * statistics.median(values), 2)

    return {
        "rollouts": len(rows),
        "env_cpu_ms_median": ms(env_cpu),
        "env_cpu_ms_mean": round(1000 * statistics.fmean(env_cpu), 2),
        "env_cpu_ms_p90": round(1000 * sorted(env_cpu)[int(0.9 * (len(env_cpu) - 1))], 2),
        "parent_cpu_ms_median": ms(parent_cpu),
        "sandbox_cpu_ms_median": ms(sandbox_cpu),
        "wall_ms_median": round(1000 * statistics.median(wall), 1),
        "tool_and_sub_calls_mean": round(statistics.fmean(calls), 1),
        "reference_reward_mean": round(statistics.fmean(rewards), 3),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python labs/fathom_rlm/benchmarks/fathom_rollout.py",
        description=__doc__.splitlines()[0],
    )
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=200_000)
    parser.add_argument("--tasks", type=cli.integer(1), default=30)
    parser.add_argument("--seeds", type=cli.integer(1), default=3)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    per_doc = -(-args.tasks // args.seeds)
    rows = [
        r
        for seed in range(101, 101 + args.seeds)
        for r in make_tasks(get_document(seed, args.doc_tokens), per_doc)
    ][: args.tasks]
    fathom.TASKS.autoload_splits = ()
    fathom.register_tasks(rows)
    warm_up()
    try:
        asyncio.run(measure(rows[:2]))  # warm caches and the fork server
        result = asyncio.run(measure(rows))
    finally:
        shutdown_fork_servers()
    print(json.dumps({"doc_tokens": args.doc_tokens, **result}, indent=2))


if __name__ == "__main__":
    main()
