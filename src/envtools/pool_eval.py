"""An evaluation through verifiers' v1 env-server pool that cannot hang on a dead worker.

verifiers' pool (`verifiers.v1.serve`) does not watch its workers: a request routed to a worker
that dies is never answered, later requests may still be routed to it, and its `eval` awaits
each rollout without a timeout, so a killed worker leaves the run waiting for ever. This
harness starts the same pool (`serve_env`, static, N workers), sends every rollout through an
`EnvClient` as `eval` does, and adds what the run needs to end:

* every rollout has a timeout (`--rollout-timeout`, default 600 s), counted once the pool is
  warm (one untimed rollout per worker first: a worker loads the environment on its first
  request); one that gets no reply in time is recorded with an error (and verifiers' own cancel
  is sent to the pool);
* the pool's worker processes are watched; a worker's death is recorded with its exit status
  and named in the errors of the rollouts that timed out after it;
* each rollout is one JSON line on stdout (scores, or the error), then a summary line; the exit
  status is 1 when any rollout failed or any worker died, else 0.

    uv run python -m envtools.pool_eval --env fathom-rlm --base-url URL --workers 3 \\
        --num-examples 8 --rollouts 2 --doc-tokens 16000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from envtools import cli

DEFAULT_ROLLOUT_TIMEOUT_S = 600.0
API_KEY_VAR = "POOL_EVAL_API_KEY"


def env_config_data(args: argparse.Namespace) -> dict[str, Any]:
    """The run's `[env]` block: the taskset's own env, with the arguments given (also used by
    benchmarks/serving_pool.py, which may add `--length-reward-weight` for gsm8k)."""
    taskset: dict[str, Any] = {"id": args.env, "num_examples": args.num_examples}
    if args.env == "fathom-rlm":
        taskset["doc_tokens"] = args.doc_tokens
    else:
        taskset["dataset_name"] = str(args.data)
        if getattr(args, "length_reward_weight", None) is not None:
            taskset["length_reward_weight"] = args.length_reward_weight
    return {"taskset": taskset}


def pool_workers(broker: int) -> dict[int, str]:
    """The pool's live worker processes: the broker's children (pid -> command line). A killed
    worker stays a zombie until the broker reaps it, which verifiers' broker never does."""
    workers = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if int(parent) == broker and state not in ("Z", "X"):
            workers[int(entry.name)] = cmd
    return workers


class WorkerWatch:
    """Polls the broker's children; a worker that was seen and is gone is recorded as dead."""

    def __init__(self, broker: int) -> None:
        self.broker = broker
        self.seen: set[int] = set()
        self.dead: list[dict[str, Any]] = []

    async def run(self, interval: float = 0.2) -> None:
        while True:
            alive = set(pool_workers(self.broker))
            for pid in sorted(self.seen - alive):
                self.dead.append({"pid": pid, "at": time.time()})
            self.seen = alive
            await asyncio.sleep(interval)


def _record(task: Any, episode: Any) -> dict[str, Any]:
    if not episode.ok or len(episode.traces) != 1:
        return {"example": task.data.model_dump(mode="json"), "error": str(episode.errors)}
    (trace,) = episode.traces
    scores = {name: reward.score for name, reward in trace.rewards.items()}
    return {"reward": trace.reward, "scores": scores | dict(trace.metrics), "error": None}


@contextlib.asynccontextmanager
async def env_server_pool(
    env_config: Any, workers: int, max_concurrent: int | None = None
) -> AsyncIterator[tuple[Any, Any]]:
    """verifiers' env server (`serve_env`, a static pool of `workers`) in a spawned process on a
    loopback address, and an `EnvClient` connected to it: `(process, client)`. On the way out the
    client closes and the pool is stopped (SIGTERM: it stops its workers, each closing its env;
    SIGKILL after 60 s, with the workers it leaves); the process's exit code is then set."""
    from verifiers.v1.serve import EnvClient, serve_env

    ctx = mp.get_context("spawn")
    address_queue = ctx.Queue()
    parent_end, child_end = ctx.Pipe()
    pool = ctx.Process(
        target=serve_env,
        kwargs={
            "max_workers": workers,
            "elastic": False,
            "address": "tcp://127.0.0.1:0",
            "address_queue": address_queue,
            "death_pipe": child_end,
            "config_data": env_config.model_dump(mode="json"),
            "max_concurrent": max_concurrent,
        },
    )
    pool.start()
    child_end.close()
    assert pool.pid is not None
    try:
        client = EnvClient(address=await asyncio.to_thread(address_queue.get, timeout=600))
        try:
            await client.wait_for_server_startup(timeout=600)
            yield pool, client
        finally:
            await client.close()
    finally:
        pool.terminate()
        await asyncio.to_thread(pool.join, 60)
        if pool.is_alive():
            # Stuck in its own teardown: kill it, and the workers it would orphan (a killed
            # worker's sandboxes go with it). Its exit code then tells the caller (-9).
            orphans = pool_workers(pool.pid)
            pool.kill()
            pool.join()
            for pid in orphans:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        parent_end.close()


async def run_pool(args: argparse.Namespace) -> dict[str, Any]:
    from verifiers.v1.configs.client import EvalClientConfig
    from verifiers.v1.types import SamplingConfig
    from verifiers.v1.utils.loaders import load_taskset, resolve_env_config

    env_config = resolve_env_config(env_config_data(args))
    tasks = [t for t in load_taskset(env_config.taskset) for _ in range(args.rollouts)]
    client_config = EvalClientConfig(base_url=args.base_url, api_key_var=API_KEY_VAR)
    started = time.time()
    async with env_server_pool(env_config, args.workers) as (pool, client):
        watch = WorkerWatch(pool.pid)
        watcher = asyncio.create_task(watch.run())

        def request(task: Any) -> Any:
            return client.run(
                client=client_config,
                model=args.model,
                sampling=SamplingConfig(max_tokens=args.max_tokens, temperature=args.temperature),
                task_data=task.data.model_dump(mode="json"),
            )

        async def rollout(task: Any) -> dict[str, Any]:
            try:
                episode = await asyncio.wait_for(request(task), args.rollout_timeout)
                record = _record(task, episode)
            except TimeoutError:
                dead = [w["pid"] for w in watch.dead]
                why = f"; pool worker(s) {dead} died" if dead else ""
                record = {"error": f"no reply within {args.rollout_timeout:g} s{why}"}
            except Exception as exc:  # a failed request is this rollout's error, recorded
                record = {"error": f"{type(exc).__name__}: {exc}"[:500]}
            print(json.dumps(record), flush=True)
            return record

        try:
            warm_up = [asyncio.wait_for(request(task), 600) for task in tasks[: args.workers]]
            await asyncio.gather(*warm_up)
            print(json.dumps({"warmed_up": len(warm_up)}), flush=True)
            records = await asyncio.gather(*(rollout(task) for task in tasks))
        finally:
            watcher.cancel()
    errors = [r["error"] for r in records if r.get("error")]
    return {
        "summary": True,
        "rollouts": len(records),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "dead_workers": watch.dead,
        "wall_s": round(time.time() - started, 1),
    }


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.pool_eval", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--env", choices=["fathom-rlm", "gsm8k-multireward"], required=True)
    parser.add_argument(
        "--base-url", type=cli.url, required=True, help="OpenAI-compatible policy endpoint"
    )
    parser.add_argument("--model", default=None, help="policy name (default: per env)")
    parser.add_argument("--workers", type=cli.integer(1), default=3)
    parser.add_argument("--num-examples", type=cli.integer(1), default=8)
    parser.add_argument("--rollouts", type=cli.integer(1), default=1, help="rollouts per task")
    parser.add_argument(
        "--rollout-timeout", type=cli.number(0.001), default=DEFAULT_ROLLOUT_TIMEOUT_S
    )
    parser.add_argument("--doc-tokens", type=cli.integer(1), default=16_000, help="fathom-rlm only")
    parser.add_argument("--max-tokens", type=cli.integer(1), default=None, help="per model call")
    parser.add_argument("--temperature", type=cli.number(0.0), default=None)
    parser.add_argument("--data", type=Path, default=None, help="gsm8k-multireward JSONL")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.env == "gsm8k-multireward":
        parser.require_file("--data", args.data, "a gsm8k JSONL file")
    args.model = args.model or ("fathom-reference" if args.env == "fathom-rlm" else "gsm8k-gold")
    os.environ.setdefault(API_KEY_VAR, "none")
    summary = asyncio.run(run_pool(args))
    print(json.dumps(summary), flush=True)
    return 1 if summary["errors"] or summary["dead_workers"] else 0


if __name__ == "__main__":
    sys.exit(main())
