"""Reward components: token counting, the gated length reward, the total, and scoring."""

from __future__ import annotations

import asyncio

import pytest
from gsm8k_multireward import (
    GSM8KConfig,
    MathGrader,
    ascore_completion,
    completion_tokens,
    length_reward,
    score_completion,
    total_reward,
)


def test_completion_tokens_prefers_reported_usage() -> None:
    assert completion_tokens("x" * 400, 17, 4.0) == 17.0
    assert completion_tokens("x" * 400, 0, 4.0) == 0.0


def test_completion_tokens_falls_back_to_characters() -> None:
    assert completion_tokens("x" * 400, None, 4.0) == 100.0
    assert completion_tokens("x" * 10, None, 4.0) == 2.5
    assert completion_tokens("", None, 4.0) == 0.0
    assert completion_tokens("x" * 300, None, 3.0) == 100.0


def test_completion_tokens_errors() -> None:
    with pytest.raises(ValueError):
        completion_tokens("x", -1, 4.0)
    with pytest.raises(ValueError):
        completion_tokens("x", None, 0.0)


@pytest.mark.parametrize(
    ("correct", "n_tokens", "threshold", "expected"),
    [
        (1.0, 100, 1024, 1.0),  # correct and short: paid
        (1.0, 1024, 1024, 1.0),  # the threshold itself counts as within
        (1.0, 1024.25, 1024, 0.0),  # correct but over
        (1.0, 5000, 1024, 0.0),
        (0.0, 100, 1024, 0.0),  # wrong and short: never paid (the gate)
        (0.0, 5000, 1024, 0.0),
        (1.0, 1, None, 0.0),  # None disables the length reward
        (0.0, 1, None, 0.0),
    ],
)
def test_length_reward_truth_table(
    correct: float, n_tokens: float, threshold: int | None, expected: float
) -> None:
    assert length_reward(correct, n_tokens, threshold) == expected


@pytest.mark.parametrize(
    ("correct", "length", "weight", "expected"),
    [
        (1.0, 1.0, 1.0, 2.0),
        (1.0, 0.0, 1.0, 1.0),
        (0.0, 0.0, 1.0, 0.0),
        (1.0, 1.0, 0.5, 1.5),
        (1.0, 1.0, 0.0, 1.0),
    ],
)
def test_total_reward(correct: float, length: float, weight: float, expected: float) -> None:
    assert total_reward(correct, length, weight) == expected


SHORT_RIGHT = "<think>6 * 3 = 18</think> The answer is \\boxed{18}."
LONG_RIGHT = "<think>" + "Let me check again. " * 300 + "</think> \\boxed{18}"
SHORT_WRONG = "<think>6 * 3 = 17</think> \\boxed{17}"


def test_score_completion(grader: MathGrader) -> None:
    config = GSM8KConfig()
    assert score_completion(SHORT_RIGHT, "18", grader, config) == {
        "correct_answer": 1.0,
        "length_reward": 1.0,
        "reward": 2.0,
    }
    assert len(LONG_RIGHT) / 4 > 1024
    assert score_completion(LONG_RIGHT, "18", grader, config) == {
        "correct_answer": 1.0,
        "length_reward": 0.0,
        "reward": 1.0,
    }
    assert score_completion(SHORT_WRONG, "18", grader, config) == {
        "correct_answer": 0.0,
        "length_reward": 0.0,
        "reward": 0.0,
    }


def test_score_completion_uses_reported_tokens(grader: MathGrader) -> None:
    config = GSM8KConfig(length_threshold_tokens=100)
    # By characters the short answer fits; the API says it used 500 tokens.
    assert score_completion(SHORT_RIGHT, "18", grader, config, reported_tokens=500) == {
        "correct_answer": 1.0,
        "length_reward": 0.0,
        "reward": 1.0,
    }
    # And the other way round: the long text was only 90 tokens by the API's count.
    assert score_completion(LONG_RIGHT, "18", grader, config, reported_tokens=90)["reward"] == 2.0


def test_score_completion_weight_and_disabled(grader: MathGrader) -> None:
    weighted = GSM8KConfig(length_reward_weight=0.25)
    assert score_completion(SHORT_RIGHT, "18", grader, weighted)["reward"] == 1.25
    disabled = GSM8KConfig(length_threshold_tokens=None)
    assert score_completion(SHORT_RIGHT, "18", grader, disabled) == {
        "correct_answer": 1.0,
        "length_reward": 0.0,
        "reward": 1.0,
    }


def test_unfinished_reasoning_earns_nothing(grader: MathGrader) -> None:
    scores = score_completion("<think>6 * 3 = \\boxed{18}", "18", grader, GSM8KConfig())
    assert scores == {"correct_answer": 0.0, "length_reward": 0.0, "reward": 0.0}


def test_ascore_completion(grader: MathGrader) -> None:
    config = GSM8KConfig()

    async def run() -> list[dict[str, float]]:
        return await asyncio.gather(
            ascore_completion(SHORT_RIGHT, "18", grader, config),
            ascore_completion("<think>x</think> \\boxed{2 \\times 9}", "18", grader, config),
            ascore_completion(SHORT_WRONG, "18", grader, config, reported_tokens=3),
        )

    assert [scores["reward"] for scores in asyncio.run(run())] == [2.0, 2.0, 0.0]
