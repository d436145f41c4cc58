"""Rollouts through verifiers' own v1 env server (a ZMQ worker pool), as a trainer drives it.

For each pool size it starts `verifiers.v1.serve.serve_env` in a spawned process (a static pool
of N workers; N = 1 is verifiers' single in-process server, no broker), connects an `EnvClient`
to the address the server bound on 127.0.0.1, sends every task of the taskset as `run`
requests, and records per-rollout scores, throughput, and the peak resident memory of the
server's whole process tree (broker, workers, sandbox fork servers, sandboxes, math-verify
workers), sampled every 0.1 s.

Needs verifiers >= 0.4.0 (its `serve` module) and the environments installed in the same
interpreter, e.g. the matrix venv that `bash scripts/test.sh` builds:

    uv run python -m envtools.policy_server --fathom-doc-tokens 16000   # prints URL
    .venvs/verifiers-0.4.0/bin/python benchmarks/serving_pool.py --env fathom-rlm \
        --base-url URL --workers 1 2 4 --doc-tokens 16000 --num-examples 8 --rollouts 2

`--kill-worker` (used by the tests): after the measured rollouts, sends them again and SIGKILLs
one pool worker that holds a live sandbox while they are in flight, waits until what that worker
owned is gone, then stops the pool.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

# envtools.cli is standard library only: import it from the source tree, as this runs under
# interpreters (the verifiers 0.4.0 matrix venv) that have the environments but not envtools.
sys.path.append(str(Path(__file__).resolve().parents[1] / "src"))
from envtools import cli
from envtools.pool_eval import env_config_data, env_server_pool

API_KEY_VAR = "SERVING_POOL_KEY"


def _tree(root: int) -> dict[int, tuple[int, str, int]]:
    """`{pid: (ppid, cmdline, rss_kib)}` for `root` and every live descendant."""
    procs: dict[int, tuple[int, str, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            status = Path(f"/proc/{entry}/status").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":
            continue
        rss = next(
            (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0
        )
        procs[int(entry)] = (int(fields[1]), cmd, rss)
    keep = {root} if root in procs else set()
    changed = True
    while changed:
        changed = False
        for pid, (ppid, _, _) in procs.items():
            if ppid in keep and pid not in keep:
                keep.add(pid)
                changed = True
    return {pid: procs[pid] for pid in keep}


class PeakMemory:
    """Samples the summed RSS of a process tree in a thread; `peak_mib` is the maximum seen."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = sum(rss for _, _, rss in _tree(self.root).values())
            self.peak_kib = max(self.peak_kib, total)
            self._stop.wait(0.1)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mib(self) -> float:
        return self.peak_kib / 1024


def _scores(episode: Any) -> dict[str, Any]:
    """One rollout's row: its task's data and every score by name."""
    if not episode.ok or len(episode.traces) != 1:
        raise RuntimeError(f"rollout failed on the env server: {episode.errors}")
    (trace,) = episode.traces
    scores = {name: reward.score for name, reward in trace.rewards.items()}
    scores.update(trace.metrics)
    usage = trace.usage
    return {
        "data": trace.task.data.model_dump(mode="json"),
        "scores": scores,
        "reward": trace.reward,
        "last_reply": trace.last_reply,
        "completion_tokens": usage.completion_tokens if usage is not None else None,
    }


async def _kill_sandbox_worker(server_pid: int) -> dict[str, Any]:
    """SIGKILL a pool worker that has a live sandbox; wait until its fork server, sandboxes and
    scratch directory are gone. Returns what was killed and what it owned."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        tree = _tree(server_pid)
        for pid, (ppid, cmd, _) in tree.items():
            if ppid != server_pid or "multiprocessing" not in cmd or "resource_tracker" in cmd:
                continue
            owned = {p: info for p, info in _tree(pid).items() if p != pid}
            fork_servers = [p for p, (pp, c, _) in owned.items() if pp == pid and "zygote" in c]
            sandboxes = [p for p, (pp, _, _) in owned.items() if pp in fork_servers]
            if not sandboxes:
                continue  # no sandbox worker alive under this one yet
            scratch = [
                str(p)
                for p in Path(os.environ.get("TMPDIR", "/tmp")).glob(f"fathom-serving-{pid}-*")
            ]
            os.kill(pid, signal.SIGKILL)
            while time.monotonic() < deadline:
                alive = [p for p in owned if Path(f"/proc/{p}").exists() and p in _tree(server_pid)]
                left = [d for d in scratch if Path(d).exists()]
                if not alive and not left:
                    return {
                        "killed": pid,
                        "owned_processes": len(owned),
                        "fork_servers": len(fork_servers),
                        "sandboxes": len(sandboxes),
                        "scratch": scratch,
                    }
                await asyncio.sleep(0.1)
            raise RuntimeError(f"worker {pid} left {alive} running and {left} on disk")
        await asyncio.sleep(0.05)
    raise RuntimeError("no pool worker with a live sandbox was found")


async def drive(args: argparse.Namespace, workers: int) -> dict[str, Any]:
    from verifiers.v1.configs.client import EvalClientConfig
    from verifiers.v1.types import SamplingConfig
    from verifiers.v1.utils.loaders import load_taskset, resolve_env_config

    env_config = resolve_env_config(env_config_data(args))
    tasks = list(load_taskset(env_config.taskset))
    client_config = EvalClientConfig(base_url=args.base_url, api_key_var=API_KEY_VAR)
    killed: dict[str, Any] | None = None
    async with env_server_pool(env_config, workers, args.max_concurrent) as (server, client):

        def rollout(task: Any) -> asyncio.Future[Any]:
            return asyncio.ensure_future(
                client.run(
                    client=client_config,
                    model=args.model,
                    sampling=SamplingConfig(),
                    task_data=task.data.model_dump(mode="json"),
                )
            )

        # Untimed warm-up, one rollout per worker (least-busy dispatch spreads them):
        # each worker imports the env and starts its fork server or math-verify pool.
        await asyncio.gather(*(rollout(tasks[i % len(tasks)]) for i in range(workers)))
        with PeakMemory(server.pid) as memory:
            started = time.perf_counter()
            runs = [rollout(task) for task in tasks for _ in range(args.rollouts)]
            rows = [_scores(episode) for episode in await asyncio.gather(*runs)]
            wall = time.perf_counter() - started
        if args.kill_worker:
            # After the measured runs, the same rollouts again, and a worker is killed mid-way.
            runs = [rollout(task) for task in tasks for _ in range(args.rollouts)]
            killed = await _kill_sandbox_worker(server.pid)
            for run in runs:
                run.cancel()
            await asyncio.gather(*runs, return_exceptions=True)
    return {
        "workers": workers,
        "rollouts": len(rows),
        "wall_s": wall,
        "rollouts_per_s": len(rows) / wall if rows else 0.0,
        "peak_rss_mib": memory.peak_mib,
        "exitcode": server.exitcode,
        "killed": killed,
        "results": rows,
    }


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python benchmarks/serving_pool.py", description=__doc__.split("\n\n")[0]
    )
    count = cli.integer(1)
    parser.add_argument("--env", choices=["fathom-rlm", "gsm8k-multireward"], required=True)
    parser.add_argument(
        "--base-url", type=cli.url, required=True, help="OpenAI-compatible policy endpoint"
    )
    parser.add_argument("--model", default=None, help="policy name (default: per env)")
    parser.add_argument("--workers", type=count, nargs="+", default=[1, 2, 4])
    parser.add_argument("--num-examples", type=count, default=8)
    parser.add_argument("--rollouts", type=count, default=2, help="rollouts per task")
    parser.add_argument("--max-concurrent", type=count, default=None, help="episodes per worker")
    # 3000: fathom-rlm's shortest document (two chapters); not imported, to start fast.
    parser.add_argument(
        "--doc-tokens", type=cli.integer(3000), default=16_000, help="fathom-rlm only"
    )
    parser.add_argument("--data", type=Path, default=None, help="gsm8k-multireward JSONL")
    parser.add_argument("--length-reward-weight", type=cli.number(0.0), default=1.0)
    parser.add_argument("--kill-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json-out", type=Path, default=None, help="write every run here")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.env == "gsm8k-multireward":
        parser.require_file("--data", args.data, "GSM8K JSONL, required for gsm8k-multireward")
    args.model = args.model or ("fathom-reference" if args.env == "fathom-rlm" else "gsm8k-gold")
    os.environ.setdefault(API_KEY_VAR, "scripted")
    load = os.getloadavg()
    runs = [asyncio.run(drive(args, n)) for n in args.workers]
    print(f"{args.env}: {args.num_examples} tasks x {args.rollouts} rollouts, load {load[0]:.1f}")
    print("| workers | rollouts | wall s | rollouts/s | peak RSS MiB (server tree) |")
    print("|---|---|---|---|---|")
    for run in runs:
        print(
            f"| {run['workers']} | {run['rollouts']} | {run['wall_s']:.1f} | "
            f"{run['rollouts_per_s']:.2f} | {run['peak_rss_mib']:.0f} |"
        )
    if args.json_out is not None:
        args.json_out.write_text(json.dumps(runs, indent=1))
    bad = {run["workers"]: run["exitcode"] for run in runs if run["exitcode"] not in (0, None)}
    if bad:
        # -9: it did not stop within 60 s of SIGTERM and was killed (pool_eval.env_server_pool).
        codes = ", ".join(f"pool of {n}: exit code {code}" for n, code in bad.items())
        print(f"error: the server exited with an error ({codes})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
