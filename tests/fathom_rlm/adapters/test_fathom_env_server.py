"""fathom-rlm under verifiers' own v1 env server: a pool of 2 worker processes, against the
scripted policy server on loopback.

* verifiers 0.4.0: `benchmarks/serving_pool.py` starts `serve_env` (static pool of 2) and an
  `EnvClient` connects to the address it bound on 127.0.0.1 and sends the tasks as `run`
  requests, the way a trainer's orchestrator does.
* verifiers 0.3.1: its v1 `eval` is server-backed (0.4.0's `vf-eval` runs in-process only), here
  with `--serve.pool.type static --serve.pool.num-workers 2`.

Both must report, for every rollout, the scores the core computes for the same rollout run
in-process, and leave no process or temp file behind. After its scored rollouts, the 0.4.0 pool
has a worker holding a live sandbox SIGKILLed mid-rollout: its fork server, sandboxes and scratch
directory must go with it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from fathom_rlm.documents import TaskRecord

REPO = Path(__file__).resolve().parents[3]
DRIVER = REPO / "benchmarks" / "serving_pool.py"
POLICY = "fathom-reference"
NUM_EXAMPLES = 3
ROLLOUTS = 2
WORKERS = 2  # a pool all the same; on 2 cores a third worker adds start-up, not speed

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _driver(matrix: Any, kit: Any, policy_url: str, tmp_path: Path, *extra: str) -> Any:
    python = matrix.python("0.4.0")
    return kit.run_cli(
        [
            str(python),
            str(DRIVER),
            "--env",
            "fathom-rlm",
            "--base-url",
            policy_url,
            "--model",
            POLICY,
            "--workers",
            str(WORKERS),
            "--num-examples",
            str(NUM_EXAMPLES),
            "--rollouts",
            str(ROLLOUTS),
            "--doc-tokens",
            str(kit.doc_tokens),
            "--json-out",
            str(tmp_path / "runs.json"),
            *extra,
        ],
        tmp_path,
    )


def test_env_server_pool_matches_in_process_and_a_killed_worker_leaves_nothing(
    matrix: Any, kit: Any, policy_url: str, eval_rows: list[TaskRecord], tmp_path: Path
) -> None:
    run = _driver(matrix, kit, policy_url, tmp_path, "--kill-worker")
    kit.check_clean(run)
    (served,) = json.loads((tmp_path / "runs.json").read_text())
    assert served["workers"] == WORKERS and served["exitcode"] in (0, None)
    results = [(r["data"]["row"], r["scores"]) for r in served["results"]]
    kit.check_scores(results, eval_rows, POLICY, ROLLOUTS)
    # Then a worker was killed with rollouts in flight: it owned a fork server with at least one
    # live sandbox, a janitor and a scratch root, and all of it went with the worker.
    killed = served["killed"]
    assert killed["sandboxes"] >= 1, killed
    assert killed["fork_servers"] == 1 and killed["owned_processes"] >= 3, killed
    assert len(killed["scratch"]) == 1, killed


def readme_pool_flags() -> list[str]:
    """The `--serve.pool.*` flags of the README's env-server command: this test runs that eval
    (tests/test_readme_commands.py does not run it again)."""
    readme = (REPO / "README.md").read_text()
    (command,) = [c for c in readme.split("\n\n") if "uv run eval fathom-rlm" in c and "pool" in c]
    flags = command.replace("\\\n", " ").split()
    at = flags.index("--serve.pool.type")
    return flags[at : at + 4]


def test_server_backed_eval_pool_matches_in_process(
    matrix: Any, kit: Any, policy_url: str, eval_rows: list[TaskRecord], tmp_path: Path
) -> None:
    python = matrix.python("0.3.1")
    out_dir = tmp_path / "out"
    argv = kit.v1_eval_argv(
        python.parent / "eval", policy_url, POLICY, NUM_EXAMPLES, ROLLOUTS, out_dir
    )
    pool = readme_pool_flags()
    assert pool == ["--serve.pool.type", "static", "--serve.pool.num-workers", str(WORKERS)]
    run = kit.run_cli([*argv, *pool], tmp_path)
    kit.check_clean(run)
    results = [(trace["task"]["data"]["row"], scores) for trace, scores in kit.v1_traces(out_dir)]
    kit.check_scores(results, eval_rows, POLICY, ROLLOUTS)
    # The eval really went through a pool of 2 (its workers log as they come up).
    logs = "\n".join(p.read_text() for p in out_dir.rglob("*.log"))
    assert f"workers={WORKERS}/{WORKERS}" in logs or "EnvServerPool up" in logs, logs[-2000:]
