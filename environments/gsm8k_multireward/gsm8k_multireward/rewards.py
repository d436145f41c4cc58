"""Reward functions: correctness, a correctness-gated length reward, and their weighted sum.

Every function is pure except for the grader call; the names of the returned components
(``correct_answer``, ``length_reward``, ``reward``) are the metric names trainers key on.
"""

from __future__ import annotations

import asyncio

from gsm8k_multireward.config import GSM8KConfig
from gsm8k_multireward.grading import MathGrader
from gsm8k_multireward.parsing import extract_answer

CORRECT_ANSWER = "correct_answer"
LENGTH_REWARD = "length_reward"
REWARD = "reward"
REWARD_COMPONENTS = (CORRECT_ANSWER, LENGTH_REWARD)
OFF_LOOP_CHARS = 64_000
"""Longer completions are parsed on a worker thread, so a server's other sessions go on."""


def completion_tokens(text: str, reported_tokens: int | None, chars_per_token: float) -> float:
    """Completion length in tokens: the API-reported count when given, else chars / ratio."""
    if reported_tokens is not None:
        if reported_tokens < 0:
            raise ValueError(f"reported_tokens must be >= 0, got {reported_tokens}")
        return float(reported_tokens)
    if chars_per_token <= 0:
        raise ValueError(f"chars_per_token must be > 0, got {chars_per_token}")
    return len(text) / chars_per_token


def length_reward(correct: float, n_tokens: float, threshold: int | None) -> float:
    """1.0 only for a correct answer within ``threshold`` tokens.

    Gated on correctness so that a short wrong answer never pays. ``threshold=None`` means
    the length reward is disabled and is always 0.0 (the total is then correctness alone).
    """
    if threshold is None:
        return 0.0
    return 1.0 if correct == 1.0 and n_tokens <= threshold else 0.0


def total_reward(correct: float, length: float, length_reward_weight: float) -> float:
    """The scalar reward for GRPO-style training: correctness + weight x length reward."""
    return correct + length_reward_weight * length


def _components(
    correct: float, completion: str, config: GSM8KConfig, reported_tokens: int | None
) -> dict[str, float]:
    n_tokens = completion_tokens(completion, reported_tokens, config.chars_per_token)
    length = length_reward(correct, n_tokens, config.length_threshold_tokens)
    return {
        CORRECT_ANSWER: correct,
        LENGTH_REWARD: length,
        REWARD: total_reward(correct, length, config.length_reward_weight),
    }


def score_completion(
    completion: str,
    gold: str,
    grader: MathGrader,
    config: GSM8KConfig,
    reported_tokens: int | None = None,
) -> dict[str, float]:
    """The reward components of one completion: correct_answer, length_reward, reward."""
    correct = grader.grade(extract_answer(completion), gold)
    return _components(correct, completion, config, reported_tokens)


async def ascore_completion(
    completion: str,
    gold: str,
    grader: MathGrader,
    config: GSM8KConfig,
    reported_tokens: int | None = None,
) -> dict[str, float]:
    """Async ``score_completion``; a long completion is parsed off the event loop."""
    if len(completion) > OFF_LOOP_CHARS:
        answer = await asyncio.to_thread(extract_answer, completion)
    else:
        answer = extract_answer(completion)
    correct = await grader.agrade(answer, gold)
    return _components(correct, completion, config, reported_tokens)
