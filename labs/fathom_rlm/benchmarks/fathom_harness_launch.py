"""Time what launching the fathom-rlm harness costs per rollout under verifiers v1.

Usage: uv run python labs/fathom_rlm/benchmarks/fathom_harness_launch.py [--rollouts 20] \\
    [--doc-tokens 200000]
           [--concurrency 1] [--compare-null] [--python .venvs/verifiers-0.4.0/bin/python]

Runs the v1 CLI of the chosen interpreter (`eval` on verifiers 0.3.1, `vf-eval` on 0.4.0) as a
subprocess against the scripted policy server with the closed-book policy, which answers in one
model call without tools, so each rollout is: runtime set-up, harness launch (document from its
seed, HTTP client, prompt), one model call, scoring. From each saved trace it reads verifiers' own
timing: `setup` (runtime and task set-up) and `agent.harness` (agent-stage time not spent waiting
for the model). Their sum is the launch cost per rollout. The first rollout of each document pays
for generating it (the core caches recent seeds); both cold and warm rows are reported.

`--compare-null` runs the same rollouts on the stock `null` harness (a uv script per rollout; it
needs `uv` and its script dependencies cached). Those rollouts fail scoring on purpose (fathom
scores only its own harness); their timing is still recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS
from fathom_rlm.documents import SPLIT_SIZES

from envtools import cli

POLICY = "fathom-closed-book"
KEY_VAR = "FATHOM_BENCH_KEY"


def _cli(python: Path) -> Path:
    probe = "import verifiers; print(verifiers.__version__)"
    version = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    # 0.3.1 names its v1 CLI `eval` (its `vf-eval` is the legacy one); 0.4.0 has only `vf-eval`.
    return python.parent / ("eval" if version.startswith("0.3.") else "vf-eval")


def _run(python: Path, url: str, args: argparse.Namespace, harness: str | None) -> list[dict]:
    out = Path(tempfile.mkdtemp(prefix="fathom-bench-"))
    try:
        argv = [
            str(_cli(python)),
            "fathom-rlm",
            "-m",
            POLICY,
            "--client.base-url",
            url,
            "--client.api-key-var",
            KEY_VAR,
            "-n",
            str(args.rollouts),
            "-r",
            "1",
            "-c",
            str(args.concurrency),
            "--env.taskset.doc-tokens",
            str(args.doc_tokens),
            "--env.taskset.num-examples",
            str(args.rollouts),
            "--no-rich",
            "--no-push",
            "-o",
            str(out),
        ]
        if harness is not None:
            argv += ["--env.agent.harness.id", harness]
        env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
        env[KEY_VAR] = "scripted"
        subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
        (traces,) = out.rglob("traces.jsonl")
        return [json.loads(line)["traces"][0] for line in traces.read_text().splitlines()]
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _costs(traces: list[dict]) -> list[tuple[float, float, float]]:
    """(setup, harness, model) seconds per rollout, in start order."""
    rows = []
    for trace in sorted(traces, key=lambda t: t["timing"]["start"]):
        timing = trace["timing"]
        setup = timing["setup"]["end"] - timing["setup"]["start"]
        agent = timing["agent"]
        rows.append((setup, agent["harness"]["duration"], agent["model"]["duration"]))
    return rows


def _report(label: str, costs: list[tuple[float, float, float]]) -> dict[str, Any]:
    launch = [s + h for s, h, _ in costs]
    warm = launch[1:] or launch
    summary = {
        "harness": label,
        "rollouts": len(costs),
        "first_s": round(launch[0], 4),
        "warm_median_s": round(statistics.median(warm), 4),
        "warm_max_s": round(max(warm), 4),
        "setup_median_s": round(statistics.median(s for s, _, _ in costs), 4),
        "harness_median_s": round(statistics.median(h for _, h, _ in costs), 4),
        "model_median_s": round(statistics.median(m for _, _, m in costs), 4),
    }
    print(json.dumps(summary))
    return summary


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python labs/fathom_rlm/benchmarks/fathom_harness_launch.py",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("--rollouts", type=cli.integer(1, SPLIT_SIZES["eval"]), default=20)
    parser.add_argument("--doc-tokens", type=cli.integer(MIN_DOC_TOKENS), default=200_000)
    parser.add_argument("--concurrency", type=cli.integer(1), default=1)
    parser.add_argument("--compare-null", action="store_true")
    parser.add_argument("--python", type=Path, default=Path(sys.executable))
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    parser.require_file("--python", args.python, "an interpreter with verifiers and fathom-rlm")

    from fathom_lab.policies import register_tasks
    from fathom_rlm.documents import build_split

    from envtools.policy_server import policy_server_in_thread

    register_tasks(build_split("eval", args.rollouts, doc_tokens=args.doc_tokens))
    with policy_server_in_thread() as url:
        _report("fathom-rlm", _costs(_run(args.python, url, args, None)))
        if args.compare_null:
            _report("null", _costs(_run(args.python, url, args, "null")))


if __name__ == "__main__":
    main()
