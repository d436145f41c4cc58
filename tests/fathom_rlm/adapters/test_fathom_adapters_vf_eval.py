"""End to end through the real CLIs, as subprocesses, against the scripted policy server.

Each matrix cell evaluates 3 eval rows x 2 rollouts with the reference policy and checks the saved
results: every score name is present, every value equals what the core computes for the same
rollout run on its own, and nothing (sandbox fork server, worker, temp dir) is left behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fathom_rlm.rewards import REWARD_NAME, SCORE_NAMES

POLICY = "fathom-reference"
NUM_EXAMPLES = 3
ROLLOUTS = 2

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def _check_clean(run: Any) -> None:
    assert run.returncode == 0, f"CLI failed:\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    assert run.left_running == [], f"processes left running: {run.left_running}"
    assert run.leftover_tmp == [], f"temp files left behind: {run.leftover_tmp}"


def _check_scores(
    kit: Any, results: list[tuple[dict[str, Any], dict[str, float]]], rows: list[dict]
) -> None:
    assert len(results) == NUM_EXAMPLES * ROLLOUTS
    by_question = {row["question"]: row for row in rows}
    expected: dict[str, dict[str, float]] = {}
    for row, scores in results:
        assert row["question"] in by_question, "a result for a row the split does not have"
        assert set(SCORE_NAMES) <= set(scores), f"missing: {set(SCORE_NAMES) - set(scores)}"
        if row["question"] not in expected:
            expected[row["question"]] = kit.replay_scores(row, POLICY)
        want = expected[row["question"]]
        for name in SCORE_NAMES:
            assert scores[name] == pytest.approx(want[name]), (name, row["question"])
    # The honest reference policy must actually be rewarded, or the comparison proves little.
    assert any(scores[REWARD_NAME] > 0.5 for _, scores in results)


def _legacy_results(out_dir: Path) -> list[tuple[dict[str, Any], dict[str, float]]]:
    files = list(out_dir.rglob("results.jsonl"))
    assert len(files) == 1, files
    results = []
    for line in files[0].read_text().splitlines():
        record = json.loads(line)
        info = record["info"]
        row = json.loads(info) if isinstance(info, str) else info
        scores = {**record.get("metrics", {}), REWARD_NAME: record["reward"]}
        results.append((row, scores))
    return results


def _v1_results(out_dir: Path) -> list[tuple[dict[str, Any], dict[str, float]]]:
    files = list(out_dir.rglob("traces.jsonl"))
    assert len(files) == 1, files
    results = []
    for line in files[0].read_text().splitlines():
        episode = json.loads(line)
        assert episode["ok"], episode["errors"]
        (trace,) = episode["traces"]
        scores = {name: reward["score"] for name, reward in trace["rewards"].items()}
        scores.update(trace["metrics"])
        assert trace["rewards"][REWARD_NAME]["weight"] == 1.0
        # Sub-calls went through the interception too: more calls than root turns.
        assert len(trace["calls"]) >= scores["turns"]
        assert len(trace["calls"]) == scores["turns"] + trace["info"]["fathom"]["sub_turns"]
        data = trace["task"]["data"]
        assert set(data["row"]) >= {"question", "seed", "doc_tokens"}
        assert len(json.dumps(data)) < 10_000, "task data must stay small (no document)"
        results.append((data["row"], scores))
    return results


@pytest.mark.parametrize("verifiers_version", ["0.2.0", "0.3.1"])
def test_legacy_vf_eval(
    matrix: Any,
    kit: Any,
    policy_url: str,
    eval_rows: list[dict],
    tmp_path: Path,
    verifiers_version: str,
) -> None:
    python = matrix.python(verifiers_version)
    out_dir = tmp_path / "out"
    run = kit.run_cli(
        [
            str(python.parent / "vf-eval"),
            "fathom-rlm",
            "-m",
            POLICY,
            "-b",
            policy_url,
            "-k",
            kit.api_key_var,
            "-n",
            str(NUM_EXAMPLES),
            "-r",
            str(ROLLOUTS),
            "-a",
            json.dumps({"doc_tokens": kit.doc_tokens, "num_examples": NUM_EXAMPLES}),
            "-s",
            "-o",
            str(out_dir),
        ],
        tmp_path,
    )
    _check_clean(run)
    _check_scores(kit, _legacy_results(out_dir), eval_rows)


@pytest.mark.parametrize("verifiers_version", ["0.3.1", "0.4.0"])
def test_v1_eval(
    matrix: Any,
    kit: Any,
    policy_url: str,
    eval_rows: list[dict],
    tmp_path: Path,
    verifiers_version: str,
) -> None:
    python = matrix.python(verifiers_version)
    # 0.3.1 ships the v1 CLI as `eval` (its `vf-eval` is the legacy one); 0.4.0 as `vf-eval`.
    cli = "eval" if verifiers_version == "0.3.1" else "vf-eval"
    out_dir = tmp_path / "out"
    run = kit.run_cli(
        [
            str(python.parent / cli),
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
            "--no-rich",
            "--no-push",
            "-o",
            str(out_dir),
        ],
        tmp_path,
    )
    _check_clean(run)
    _check_scores(kit, _v1_results(out_dir), eval_rows)
