"""Failure is loud: the evaluation exits non-zero with one line saying why, draws no chart
without data, and the policy server serves any document length or refuses with a clear error."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from fathom_lab import evaluate
from fathom_lab.audit.attacks import PhantomEvidence
from fathom_lab.evaluate import CHART_NAME, endpoint_contender, failure_line, run_evaluation
from fathom_lab.policies import (
    FathomReference,
    TaskIndex,
    UnknownTaskError,
    document_length_guesses,
)
from fathom_rlm.documents import build_split

from envtools.policy_server import policy_server_in_thread


def closed_port_url() -> str:
    """A loopback URL nothing listens on (the port was bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def run_main(tmp_path: Path, *extra: str) -> int:
    return evaluate.main(
        ["--n", "3", "--resamples", "1000", "--timeout", "60", "--out", str(tmp_path), *extra]
    )


def test_every_rollout_failing_exits_non_zero_with_one_clear_line(
    tmp_path: Path, capsys: Any
) -> None:
    (tmp_path / CHART_NAME).write_bytes(b"an old chart")  # must not survive as this run's
    code = run_main(tmp_path, "--model", "m", "--base-url", closed_port_url())
    assert code == 1
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1
    assert "3 of 3 rollouts failed" in lines[0] and "every rollout of m failed" in lines[0]
    assert "APIConnectionError" in lines[0]
    assert "Warning" not in err and "warn" not in err.lower()  # no matplotlib noise
    assert not (tmp_path / CHART_NAME).exists()
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["chart"] is None
    assert "No chart" in (tmp_path / "report.md").read_text()


def test_a_failed_share_within_the_limit_exits_zero(tmp_path: Path, capsys: Any) -> None:
    code = run_main(
        tmp_path,
        "--model",
        "m",
        "--base-url",
        closed_port_url(),
        "--policies",
        "fathom-closed-book",
        "--max-failed-share",
        "0.5",
    )
    assert code == 0  # 3 of 6 failed: exactly the allowed share
    assert (tmp_path / CHART_NAME).exists()  # closed-book completed: there is a point to draw
    assert not [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    with pytest.raises(SystemExit) as usage_error:
        run_main(tmp_path, "--max-failed-share", "1.5")
    assert usage_error.value.code == 2


def test_failure_line_reports_counts_and_the_first_error() -> None:
    results = {
        "policies": {
            "a": {"rollouts": 4, "errors": 1},
            "b": {"rollouts": 4, "errors": 0},
        },
        "errors": [{"policy": "a", "task": 2, "error": "RuntimeError: boom\nsecond line"}],
    }
    line = failure_line(results, 0.0)
    assert line == (
        "error: 1 of 8 rollouts failed (allowed share 0); first (a, task 2): "
        "RuntimeError: boom second line"
    )
    assert failure_line(results, 0.125) is None
    assert failure_line({"policies": {}, "errors": []}, 1.0) == "error: no rollout ran"


# -------------------------------------------------------------------- document lengths


def test_length_guesses_round_down_to_hundreds_then_thousands() -> None:
    assert document_length_guesses(64_032) == [16_000]
    assert document_length_guesses(4 * 16_537 + 40) == [16_500, 16_000]
    assert document_length_guesses(0) == []


def config(n: int, doc_tokens: int) -> dict[str, Any]:
    return {"command": "t", "split": "eval", "n": n, "doc_tokens": doc_tokens, "seed": 0} | {
        "resamples": 1_000
    }


def fresh_reference() -> dict[str, Any]:
    """The honest reference: it reads only the question and the document, so any length."""
    return {"fathom-reference": FathomReference}


def fresh_gold_attack() -> dict[str, Any]:
    """An attack that holds the gold, with its own task index that knows no length in advance."""
    index = TaskIndex(autoload_splits=("eval",), autoload_doc_tokens=())
    return {"fathom-phantom-evidence": lambda: PhantomEvidence(index)}


def test_a_server_started_without_the_length_serves_it(tmp_path: Path) -> None:
    rows = build_split("eval", 2, doc_tokens=16_000)
    with policy_server_in_thread(policies=fresh_reference()) as url:
        contender = endpoint_contender("fathom-reference", url, name="served")
        results = run_evaluation(
            [contender],
            rows,
            tmp_path,
            config=config(2, 16_000),
            resamples=1_000,
        )
    assert results["errors"] == []
    answers = [json.loads(line)["answer"] for line in (tmp_path / "rollouts.jsonl").open()]
    assert "unknown" not in answers
    assert results["policies"]["served"]["rewards"]["correctness"]["mean"] > 0


def test_the_reference_serves_any_length_and_a_gold_attack_refuses_loudly(
    tmp_path: Path,
) -> None:
    rows = build_split("eval", 1, doc_tokens=16_050)  # not a whole hundred: cannot be guessed
    policies = fresh_reference() | fresh_gold_attack()
    with policy_server_in_thread(policies=policies) as url:
        contenders = [
            endpoint_contender("fathom-reference", url, name="honest"),
            endpoint_contender("fathom-phantom-evidence", url, name="refused"),
        ]
        results = run_evaluation(
            contenders,
            rows,
            tmp_path,
            config=config(1, 16_050),
            resamples=1_000,
        )
    # The honest reference reads the document, so no length is unknown to it...
    assert results["policies"]["honest"]["errors"] == 0
    # ...while an attack that needs the task row refuses with the way out, never "unknown".
    [error] = results["errors"]
    assert error["policy"] == "refused"
    assert "422" in error["error"] or "UnprocessableEntity" in error["error"]
    assert "--fathom-doc-tokens" in error["error"]


def test_the_index_refuses_instead_of_answering_unknown() -> None:
    index = TaskIndex(autoload_splits=(), autoload_doc_tokens=())
    with pytest.raises(UnknownTaskError, match="--fathom-doc-tokens"):
        index.require("Who is nobody?", 64_032)
