"""TRL's `GRPOTrainer`: a train dataset and one reward function per named reward component.

TRL calls each reward function as `fn(prompts=..., completions=..., completion_ids=..., **columns)`
where `columns` are the dataset's other columns (here `answer`, the gold number), and logs each
one under its `__name__` (`rewards/correct_answer/mean`, `rewards/length_reward/mean`). With
`multi_objective_aggregation="normalize_then_sum"` TRL normalises each component on its own
(GDPO); with the default `"sum_then_normalize"` it sums them with `reward_weights` (GRPO).

Nothing here imports TRL: the functions only need TRL's calling convention. Both functions score
a batch once through the core (`score_completion`); the second call reuses that scoring.
Completion length is the number of completion tokens TRL generated (`completion_ids`), the
count the core prefers over its characters-per-token estimate.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from gsm8k_multireward._vendor.env_adapters import (
    RewardBatch,
    RewardFunc,
    TRLEnvironment,
    named_rewards,
)
from gsm8k_multireward.config import GSM8KConfig
from gsm8k_multireward.data import build_prompt, load_examples
from gsm8k_multireward.grading import MathGrader
from gsm8k_multireward.rewards import CORRECT_ANSWER, LENGTH_REWARD, score_completion

REWARD_KEYS: tuple[str, ...] = (CORRECT_ANSWER, LENGTH_REWARD)
"""The reward components, in the order the default weights and the reward functions use."""


def load_trl_environment(**kwargs: Any) -> TRLEnvironment:
    """The environment for TRL; `kwargs` are `GSM8KConfig`'s fields (the environment arguments)."""
    config = GSM8KConfig(**kwargs)
    grader = MathGrader(
        max_workers=config.math_verify_max_workers, timeout=config.math_verify_timeout
    )
    return TRLEnvironment(
        train_dataset=train_dataset(config),
        reward_funcs=reward_functions(config, grader),
        reward_weights={CORRECT_ANSWER: 1.0, LENGTH_REWARD: config.length_reward_weight},
        close=grader.close,
    )


def check_arguments(**kwargs: Any) -> None:
    """Raise TypeError/ValueError for arguments `load_trl_environment` would refuse (no data)."""
    GSM8KConfig(**kwargs)


def train_dataset(config: GSM8KConfig) -> Any:
    """The rows as a `datasets.Dataset`: `prompt` (chat messages) and `answer` (gold number)."""
    from datasets import Dataset

    rows = load_examples(config)
    return Dataset.from_list(
        [
            {"prompt": build_prompt(row["question"], config.system_prompt), "answer": row["answer"]}
            for row in rows
        ]
    )


def reward_functions(config: GSM8KConfig, grader: MathGrader) -> dict[str, RewardFunc]:
    """`{"correct_answer": fn, "length_reward": fn}` in TRL's reward-function signature."""
    scorer = _BatchScorer(config, grader)
    return named_rewards(REWARD_KEYS, scorer.scores, "each completion")


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or the last assistant message of a conversation."""
    if isinstance(completion, str):
        return completion
    for message in reversed(list(completion or [])):
        if isinstance(message, Mapping) and message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, list):  # multi-part content: its text parts
                return "".join(
                    part.get("text", "") for part in content if isinstance(part, Mapping)
                )
            return content or ""
    return ""


class _BatchScorer:
    """Scores a batch once; TRL calls every reward function on the same batch in turn."""

    def __init__(self, config: GSM8KConfig, grader: MathGrader) -> None:
        self._config = config
        self._grader = grader
        self._lock = threading.Lock()
        self._last: tuple[tuple, list[dict[str, float]]] | None = None

    def scores(self, batch: RewardBatch) -> list[dict[str, float]]:
        """Each completion's scores against the batch's gold `answer` column."""
        completions, answers = batch.completions, batch.columns["answer"]
        if len(answers) != len(completions):
            raise ValueError(f"{len(completions)} completions but {len(answers)} answers")
        texts = [completion_text(c) for c in completions]
        key = (tuple(texts), tuple(str(a) for a in answers), tuple(batch.completion_tokens or ()))
        with self._lock:
            if self._last is not None and self._last[0] == key:
                return self._last[1]
            scored = [
                score_completion(
                    text,
                    str(gold),
                    self._grader,
                    self._config,
                    reported_tokens=batch.tokens(index),
                )
                for index, (text, gold) in enumerate(zip(texts, answers, strict=True))
            ]
            self._last = (key, scored)
            return scored
