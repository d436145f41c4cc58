"""End to end through the real CLIs, as subprocesses, against the scripted policy server.

Each matrix cell evaluates 3 eval rows x 2 rollouts with the reference policy and checks the saved
results: every score name is present, every value equals what the core computes for the same
rollout run on its own, and nothing (sandbox fork server, worker, temp dir) is left behind.
"""

from __future__ import annotations

import json
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
