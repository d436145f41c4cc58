"""End to end through the real CLIs, as subprocesses, against the scripted policy server.

Legacy `vf-eval` on verifiers 0.2.0 evaluates 3 eval rows x 2 rollouts with the reference policy;
its saved results must hold every score name, each value equal to what the core computes for the
same rollout run on its own, and nothing (sandbox fork server, worker, temp dir) may be left
behind. Legacy `vf-eval` (0.2.0) and v1 `eval` (0.3.1) / `vf-eval` (0.4.0) serve 3 of the
user's own rows (`source`) the same way. The other
cells run as the README writes them, with the same score checks (tests/test_readme_commands.py:
vf-eval-legacy and the own-documents walkthrough on 0.3.1, eval-in-process on 0.3.1, vf-eval-v1
on 0.4.0; tests/support/fathom_runs.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fathom_runs import legacy_results, v1_results

if TYPE_CHECKING:
    from fathom_rlm.documents import TaskRecord

POLICY = "fathom-reference"
NUM_EXAMPLES = 3
ROLLOUTS = 2

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


@pytest.mark.parametrize("verifiers_version", ["0.2.0"])
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
    kit.check_scores(legacy_results(out_dir), eval_rows, POLICY, ROLLOUTS)


@pytest.mark.parametrize("verifiers_version", ["0.2.0"])
def test_legacy_vf_eval_on_user_rows(
    matrix: Any,
    kit: Any,
    user_policy_url: str,
    user_rows: list[TaskRecord],
    tmp_path: Path,
    verifiers_version: str,
) -> None:
    """Legacy `vf-eval` serves the user's own rows (`-a '{"source": ...}'`) with the scores the
    core gives the same rollouts."""
    python = matrix.python(verifiers_version)
    out_dir = tmp_path / "out"
    arguments = {"source": str(kit.user_rows_path), "num_examples": kit.user_row_count}
    run = kit.run_cli(
        [
            str(python.parent / "vf-eval"),
            "fathom-rlm",
            *("-m", POLICY, "-b", user_policy_url, "-k", kit.api_key_var),
            *("-n", str(kit.user_row_count), "-r", "1", "-a", json.dumps(arguments)),
            *("-s", "-o", str(out_dir)),
        ],
        tmp_path,
    )
    kit.check_clean(run)
    kit.check_scores(legacy_results(out_dir), user_rows, POLICY, 1)


# verifiers 0.4.0 names its v1 CLI `vf-eval`; 0.3.1 calls it `eval`.
V1_CLI = {"0.3.1": "eval", "0.4.0": "vf-eval"}


@pytest.mark.parametrize("verifiers_version", list(V1_CLI))
def test_v1_eval_on_user_rows(
    matrix: Any,
    kit: Any,
    user_policy_url: str,
    user_rows: list[TaskRecord],
    tmp_path: Path,
    verifiers_version: str,
) -> None:
    python = matrix.python(verifiers_version)
    out_dir = tmp_path / "out"
    source = ("--env.taskset.source", str(kit.user_rows_path))
    cli = python.parent / V1_CLI[verifiers_version]
    argv = kit.v1_eval_argv(cli, user_policy_url, POLICY, kit.user_row_count, 1, out_dir, source)
    run = kit.run_cli(argv, tmp_path)
    kit.check_clean(run)
    kit.check_scores(v1_results(out_dir), user_rows, POLICY, 1)
    # The harness asked the question with its answer-kind line (the number row's).
    asked = [node["message"] for trace, _ in kit.v1_traces(out_dir) for node in trace["nodes"]]
    assert any(m["role"] == "user" and "Answer with a number." in m["content"] for m in asked)


def test_evaluate_data_on_user_rows(kit: Any, user_rows: list[TaskRecord], tmp_path: Path) -> None:
    """`fathom_lab.evaluate --data` (the scripted policy in-process, no server): the same scores."""
    out_dir = tmp_path / "out"
    run = kit.run_cli(
        [
            sys.executable,
            *("-m", "fathom_lab.evaluate", "--data", str(kit.user_rows_path)),
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
