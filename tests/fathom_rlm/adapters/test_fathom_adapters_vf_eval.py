"""End to end through the real CLIs, as subprocesses, against the scripted policy server.

Each matrix cell evaluates 3 eval rows x 2 rollouts with the reference policy and checks the saved
results: every score name is present, every value equals what the core computes for the same
rollout run on its own, and nothing (sandbox fork server, worker, temp dir) is left behind. Both
adapters also serve 3 of the user's own rows (`source`), once each, on verifiers 0.3.1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fathom_rlm.rewards import REWARD_NAME

if TYPE_CHECKING:
    from fathom_rlm.documents import TaskRecord

POLICY = "fathom-reference"
NUM_EXAMPLES = 3
ROLLOUTS = 2

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def _results_file(out_dir: Path) -> Path:
    files = list(out_dir.rglob("results.jsonl"))
    assert len(files) == 1, files
    return files[0]


def _legacy_results(out_dir: Path) -> list[tuple[dict[str, Any], dict[str, float]]]:
    results = []
    for line in _results_file(out_dir).read_text().splitlines():
        record = json.loads(line)
        info = record["info"]
        row = json.loads(info) if isinstance(info, str) else info
        scores = {**record.get("metrics", {}), REWARD_NAME: record["reward"]}
        results.append((row, scores))
    return results


def _v1_results(out_dir: Path, kit: Any) -> list[tuple[dict[str, Any], dict[str, float]]]:
    results = []
    for trace, scores in kit.v1_traces(out_dir):
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
    eval_rows: list[TaskRecord],
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
    kit.check_clean(run)
    kit.check_scores(_legacy_results(out_dir), eval_rows, POLICY, ROLLOUTS)


@pytest.mark.parametrize("verifiers_version", ["0.3.1", "0.4.0"])
def test_v1_eval(
    matrix: Any,
    kit: Any,
    policy_url: str,
    eval_rows: list[TaskRecord],
    tmp_path: Path,
    verifiers_version: str,
) -> None:
    python = matrix.python(verifiers_version)
    # 0.3.1 ships the v1 CLI as `eval` (its `vf-eval` is the legacy one); 0.4.0 as `vf-eval`.
    cli = "eval" if verifiers_version == "0.3.1" else "vf-eval"
    out_dir = tmp_path / "out"
    argv = kit.v1_eval_argv(
        python.parent / cli, policy_url, POLICY, NUM_EXAMPLES, ROLLOUTS, out_dir
    )
    run = kit.run_cli(argv, tmp_path)
    kit.check_clean(run)
    kit.check_scores(_v1_results(out_dir, kit), eval_rows, POLICY, ROLLOUTS)


def test_legacy_vf_eval_on_user_rows(
    matrix: Any, kit: Any, user_policy_url: str, user_rows: list[TaskRecord], tmp_path: Path
) -> None:
    python = matrix.python("0.3.1")
    out_dir = tmp_path / "out"
    count = kit.user_row_count
    run = kit.run_cli(
        [
            str(python.parent / "vf-eval"),
            "fathom-rlm",
            *("-m", POLICY, "-b", user_policy_url, "-k", kit.api_key_var),
            *("-n", str(count), "-r", "1"),
            *("-a", json.dumps({"source": str(kit.user_rows_path), "num_examples": count})),
            *("-s", "-o", str(out_dir)),
        ],
        tmp_path,
    )
    kit.check_clean(run)
    results = _legacy_results(out_dir)
    kit.check_scores(results, user_rows, POLICY, 1)
    # The model was asked the question with its answer-kind line (the number row's).
    prompts = [
        json.loads(line)["prompt"] for line in _results_file(out_dir).read_text().splitlines()
    ]
    assert any("Answer with a number." in json.dumps(p) for p in prompts)


def test_v1_eval_on_user_rows(
    matrix: Any, kit: Any, user_policy_url: str, user_rows: list[TaskRecord], tmp_path: Path
) -> None:
    python = matrix.python("0.3.1")
    out_dir = tmp_path / "out"
    source = ("--env.taskset.source", str(kit.user_rows_path))
    argv = kit.v1_eval_argv(
        python.parent / "eval", user_policy_url, POLICY, kit.user_row_count, 1, out_dir, source
    )
    run = kit.run_cli(argv, tmp_path)
    kit.check_clean(run)
    kit.check_scores(_v1_results(out_dir, kit), user_rows, POLICY, 1)
    # The harness asked the question with its answer-kind line (the number row's).
    asked = [node["message"] for trace, _ in kit.v1_traces(out_dir) for node in trace["nodes"]]
    assert any(m["role"] == "user" and "Answer with a number." in m["content"] for m in asked)


def test_evaluate_data_on_user_rows(kit: Any, user_rows: list[TaskRecord], tmp_path: Path) -> None:
    """`envtools.evaluate --data` (the scripted policy in-process, no server): the same scores."""
    out_dir = tmp_path / "out"
    run = kit.run_cli(
        [
            sys.executable,
            *("-m", "envtools.evaluate", "--data", str(kit.user_rows_path)),
            *("--n", str(kit.user_row_count), "--policies", POLICY, "--out", str(out_dir)),
        ],
        tmp_path,
    )
    kit.check_clean(run)
    lines = (out_dir / "rollouts.jsonl").read_text().splitlines()
    rollouts = sorted((json.loads(line) for line in lines), key=lambda r: r["task"])
    assert [r["row_id"] for r in rollouts] == [row.row_id for row in user_rows]
    results = [(row.to_json(), r["scores"]) for row, r in zip(user_rows, rollouts, strict=True)]
    kit.check_scores(results, user_rows, POLICY, 1)
