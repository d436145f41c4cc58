"""Soak: many fathom-rlm rollouts at once, through the real loop and sandbox, against the scripted
policy server in its own process over loopback HTTP; optionally with injected faults.

Usage:
    uv run python labs/fathom_rlm/benchmarks/fathom_soak.py --rollouts 1000 --concurrency 64
    uv run python labs/fathom_rlm/benchmarks/fathom_soak.py --rollouts 200 --concurrency 32 \
        --faults drop=0.01,error=0.01,malformed=0.03,empty=0.01,slow=0.02,slow_s=2 \
        --cancel-every 25 --kill-workers 10 --kill-fork-servers 2

Prints one JSON object: errors (by kind), ended_by counts, latency the environment adds to each
rollout (wall time minus time waiting for the model; p50, p95), event-loop lag (p99, max; a
0.05 s probe), peak RSS and PSS of this process and every process it started except the policy
server, and what was left behind afterwards (processes, file descriptors, sandbox directories).
Exits 1 when a clean run (no faults, no chaos) had an error, or when anything leaked.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile

from fathom_lab.soak import Chaos, soak
from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS
from fathom_rlm.agent import RolloutCaps
from fathom_rlm.documents import TaskRecord, build_split

from envtools import cli
from envtools.faults import FaultPlan


def rows_over_documents(doc_tokens: int, documents: int) -> list[TaskRecord]:
    """Eval rows from the first `documents` documents of the split (both processes keep a small
    document cache, so a soak over every document would mostly measure regeneration)."""
    rows = build_split("eval", doc_tokens=doc_tokens)
    seeds = list(dict.fromkeys(r.seed for r in rows))[:documents]
    return [r for r in rows if r.seed in seeds]


def start_policy_server(doc_tokens: int, faults: str | None) -> tuple[subprocess.Popen[str], str]:
    argv = [sys.executable, "-m", "envtools.policy_server", "--port", "0"]
    argv += ["--fathom-doc-tokens", str(doc_tokens)]
    if faults:
        argv += ["--faults", faults]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        process.kill()
        raise SystemExit(f"the policy server did not start (printed {url!r})")
    return process, url


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(prog="python labs/fathom_rlm/benchmarks/fathom_soak.py")
    parser.add_argument("--rollouts", type=cli.integer(1), default=1000)
    parser.add_argument("--concurrency", type=cli.integer(1), default=64)
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=200_000)
    parser.add_argument(
        "--documents", type=cli.integer(1), default=4, help="distinct documents used"
    )
    # Checked here (a typo fails now, not in the server), passed on as written.
    parser.add_argument(
        "--faults",
        type=cli.checked(_fault_spec, "name=value pairs of envtools.faults"),
        default=None,
        help="policy server fault spec (envtools.faults)",
    )
    parser.add_argument("--cancel-every", type=cli.integer(0), default=0)
    parser.add_argument("--kill-workers", type=cli.integer(0), default=0)
    parser.add_argument("--kill-fork-servers", type=cli.integer(0), default=0)
    parser.add_argument(
        "--time-budget", type=cli.number(0.1), default=None, help="seconds per rollout"
    )
    return parser


def _fault_spec(text: str) -> str:
    FaultPlan.parse(text)
    return text


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    load_before = os.getloadavg()
    # Sandbox directories go to a fresh directory, so leftovers are this run's alone.
    tempfile.tempdir = tempfile.mkdtemp(prefix="fathom-soak-")
    rows = rows_over_documents(args.doc_tokens, args.documents)
    caps = RolloutCaps(time_budget_s=args.time_budget or RolloutCaps().time_budget_s)
    chaos = Chaos(
        cancel_every=args.cancel_every,
        kill_workers=args.kill_workers,
        kill_fork_servers=args.kill_fork_servers,
    )
    server, url = start_policy_server(args.doc_tokens, args.faults)
    try:
        report = asyncio.run(
            soak(
                url,
                rows,
                n=args.rollouts,
                concurrency=args.concurrency,
                caps=caps,
                chaos=chaos,
                keep_pids=[server.pid],
            )
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
        from fathom_rlm.sandbox import shutdown_fork_servers

        shutdown_fork_servers()
    summary = report.summary()
    summary["config"] = {
        "rollouts": args.rollouts,
        "concurrency": args.concurrency,
        "doc_tokens": args.doc_tokens,
        "documents": args.documents,
        "rows": len(rows),
        "faults": args.faults,
        "cpus": os.cpu_count(),
        "loadavg_1_5_15_before": [round(x, 2) for x in load_before],
        "loadavg_1_5_15_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(summary, indent=2))
    if not os.listdir(tempfile.tempdir):
        os.rmdir(tempfile.tempdir)
    disturbed = bool(
        args.faults or args.cancel_every or args.kill_workers or args.kill_fork_servers
    )
    if not report.leftovers.clean or (summary["errors"] and not disturbed):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
