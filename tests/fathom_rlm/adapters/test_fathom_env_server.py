"""fathom-rlm under verifiers' own v1 env server: a pool of 4 worker processes, against the
scripted policy server on loopback.

* verifiers 0.4.0: `benchmarks/serving_pool.py` starts `serve_env` (static pool of 4) and an
  `EnvClient` connects to the address it bound on 127.0.0.1 and sends the tasks as `run`
  requests, the way a trainer's orchestrator does.
* verifiers 0.3.1: its v1 `eval` is server-backed (0.4.0's `vf-eval` runs in-process only), here
  with `--serve.pool.type static --serve.pool.num-workers 4`.

Both must report, for every rollout, the scores the core computes for the same rollout run
in-process, and leave no process or temp file behind. A third test SIGKILLs a worker holding a
live sandbox mid-rollout: its fork server, sandboxes and scratch directory must go with it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fathom_rlm.rewards import REWARD_NAME, SCORE_NAMES

REPO = Path(__file__).resolve().parents[3]
DRIVER = REPO / "benchmarks" / "serving_pool.py"
POLICY = "fathom-reference"
NUM_EXAMPLES = 3
ROLLOUTS = 2
WORKERS = 4

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]


def _check_clean(run: Any) -> None:
    assert run.returncode == 0, f"failed:\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    assert run.left_running == [], f"processes left running: {run.left_running}"
    assert run.leftover_tmp == [], f"temp files left behind: {run.leftover_tmp}"


def _check_scores(kit: Any, results: list[tuple[dict, dict[str, float]]], rows: list[dict]) -> None:
    assert len(results) == NUM_EXAMPLES * ROLLOUTS
    assert {row["question"] for row, _ in results} == {row["question"] for row in rows}
    expected: dict[str, dict[str, float]] = {}
    for row, scores in results:
        assert set(SCORE_NAMES) <= set(scores), f"missing: {set(SCORE_NAMES) - set(scores)}"
        if row["question"] not in expected:
            expected[row["question"]] = kit.replay_scores(row, POLICY)
        for name in SCORE_NAMES:
            assert scores[name] == pytest.approx(expected[row["question"]][name]), name
    assert any(scores[REWARD_NAME] > 0.5 for _, scores in results), "nothing was rewarded"


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


def test_env_server_pool_client_matches_in_process(
    matrix: Any, kit: Any, policy_url: str, eval_rows: list[dict], tmp_path: Path
) -> None:
    run = _driver(matrix, kit, policy_url, tmp_path)
    _check_clean(run)
    (served,) = json.loads((tmp_path / "runs.json").read_text())
    assert served["workers"] == WORKERS and served["exitcode"] == 0
    results = [(r["data"]["row"], r["scores"]) for r in served["results"]]
    _check_scores(kit, results, eval_rows)


def test_env_server_worker_killed_mid_rollout_leaves_nothing(
    matrix: Any, kit: Any, policy_url: str, tmp_path: Path
) -> None:
    run = _driver(matrix, kit, policy_url, tmp_path, "--kill-worker")
    _check_clean(run)
    (served,) = json.loads((tmp_path / "runs.json").read_text())
    killed = served["killed"]
    # The killed worker owned a fork server with at least one live sandbox, a janitor and a
    # scratch root; all of it went with the worker (the driver waited for that).
    assert killed["sandboxes"] >= 1, killed
    assert killed["fork_servers"] == 1 and killed["owned_processes"] >= 3, killed
    assert len(killed["scratch"]) == 1, killed


def test_server_backed_eval_pool_matches_in_process(
    matrix: Any, kit: Any, policy_url: str, eval_rows: list[dict], tmp_path: Path
) -> None:
    python = matrix.python("0.3.1")
    out_dir = tmp_path / "out"
    run = kit.run_cli(
        [
            str(python.parent / "eval"),
            "fathom-rlm",
            "-m",
            POLICY,
            "--client.base-url",
            policy_url,
            "--client.api-key-var",
            kit.api_key_var,
            "-n",
            str(NUM_EXAMPLES),
            "-r",
            str(ROLLOUTS),
            "--env.taskset.doc-tokens",
            str(kit.doc_tokens),
            "--env.taskset.num-examples",
            str(NUM_EXAMPLES),
            "--serve.pool.type",
            "static",
            "--serve.pool.num-workers",
            str(WORKERS),
            "--no-rich",
            "--no-push",
            "-o",
            str(out_dir),
        ],
        tmp_path,
    )
    _check_clean(run)
    (traces,) = list(out_dir.rglob("traces.jsonl"))
    results = []
    for line in traces.read_text().splitlines():
        episode = json.loads(line)
        assert episode["ok"], episode["errors"]
        (trace,) = episode["traces"]
        scores = {name: reward["score"] for name, reward in trace["rewards"].items()}
        scores.update(trace["metrics"])
        results.append((trace["task"]["data"]["row"], scores))
    _check_scores(kit, results, eval_rows)
    # The eval really went through a pool of 4 (its workers log as they come up).
    logs = "\n".join(p.read_text() for p in out_dir.rglob("*.log"))
    assert f"workers={WORKERS}/{WORKERS}" in logs or "EnvServerPool up" in logs, logs[-2000:]
