"""gsm8k-multireward's saved verifiers runs, read back and checked against the core.

Shared by the matrix tests (tests/integration) and the README walkthrough's run
(tests/test_readme_commands.py): each reported score must equal what `score_completion`
computes for the same completion, and the total must be correct + weight x length.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gsm8k_multireward import GSM8KConfig, MathGrader, score_completion

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "gsm8k_multireward" / "fixtures" / "adapters.jsonl"
QUESTIONS = [json.loads(line)["question"] for line in FIXTURE.read_text().splitlines()]
# What each policy of the gsm8k ladder earns: (correct_answer, length_reward).
EXPECTED = {"gold": (1.0, 1.0), "verbose": (1.0, 0.0), "wrong": (0.0, 0.0), "noanswer": (0.0, 0.0)}


def check_scores(
    rows: list[dict[str, Any]],
    grader: MathGrader,
    weight: float,
    expected_rollouts: int,
    style_of: Callable[[str], str],
) -> None:
    """`rows`: question, completion, gold, reported tokens, the two scores and the total;
    `style_of(question)` names the ladder policy that answered it."""
    assert len(rows) == expected_rollouts
    config = GSM8KConfig(length_reward_weight=weight)
    for row in rows:
        core = score_completion(
            row["completion"], row["gold"], grader, config, reported_tokens=row["tokens"]
        )
        assert row["correct_answer"] == core["correct_answer"]
        assert row["length_reward"] == core["length_reward"]
        assert row["reward"] == pytest.approx(core["reward"])
        assert row["reward"] == pytest.approx(row["correct_answer"] + weight * row["length_reward"])
        expected = EXPECTED[style_of(row["question"])]
        assert (row["correct_answer"], row["length_reward"]) == expected


def legacy_rows(output: Path) -> list[dict[str, Any]]:
    """The rows of the one `results.jsonl` a legacy `vf-eval -s` saved under `output`."""
    found = sorted(output.glob("**/outputs/evals/*/*/results.jsonl"))
    assert len(found) == 1, f"expected one saved legacy run under {output}, found {found}"
    (results,) = found
    rows = []
    for line in results.read_text().splitlines():
        result = json.loads(line)
        assert set(result["metrics"]) >= {"correct_answer", "length_reward"}
        rows.append(
            {
                "question": result["prompt"][-1]["content"],
                "completion": result["completion"][-1]["content"],
                "gold": result["answer"],
                "tokens": int(result["token_usage"]["output_tokens"]),
                "correct_answer": result["metrics"]["correct_answer"],
                "length_reward": result["metrics"]["length_reward"],
                "reward": result["reward"],
            }
        )
    return rows


def v1_rows(output: Path, weight: float) -> list[dict[str, Any]]:
    """The rows of the one `traces.jsonl` a v1 eval wrote under `output`."""
    (traces,) = output.glob("**/traces.jsonl")
    rows = []
    for line in traces.read_text().splitlines():
        episode = json.loads(line)
        assert episode["ok"], episode["errors"]
        (trace,) = episode["traces"]
        assert not trace["errors"], trace["errors"]
        rewards = trace["rewards"]
        assert set(rewards) == {"correct_answer", "length_reward"}
        assert rewards["correct_answer"]["weight"] == 1.0
        assert rewards["length_reward"]["weight"] == weight
        reply = [n["message"] for n in trace["nodes"] if n["message"]["role"] == "assistant"]
        rows.append(
            {
                "question": episode["task"]["data"]["prompt"],
                "completion": reply[-1]["content"].strip(),
                "gold": episode["task"]["data"]["answer"],
                "tokens": sum(call["usage"]["completion_tokens"] for call in trace["calls"]),
                "correct_answer": rewards["correct_answer"]["score"],
                "length_reward": rewards["length_reward"]["score"],
                "reward": sum(r["score"] * r["weight"] for r in rewards.values()),
            }
        )
    return rows


def check_walkthrough(copy: Path) -> None:
    """The README walkthrough (verifiers 0.3.1, the workspace's version): its legacy run (`-s`,
    6 questions x 3, weight 1) and its v1 run (6 x 1, weight 0.5), both answered by
    `gsm8k-gold`, report the core's scores."""
    with MathGrader(max_workers=2, timeout=5.0) as grader:
        check_scores(legacy_rows(copy), grader, 1.0, 3 * len(QUESTIONS), lambda _: "gold")
        rows = v1_rows(copy / "outputs" / "v1", 0.5)
        check_scores(rows, grader, 0.5, len(QUESTIONS), lambda _: "gold")
