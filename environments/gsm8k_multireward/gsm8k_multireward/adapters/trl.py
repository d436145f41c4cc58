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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gsm8k_multireward.config import GSM8KConfig
from gsm8k_multireward.data import build_prompt, load_examples
from gsm8k_multireward.grading import MathGrader
from gsm8k_multireward.rewards import CORRECT_ANSWER, LENGTH_REWARD, score_completion

REWARD_KEYS: tuple[str, ...] = (CORRECT_ANSWER, LENGTH_REWARD)
"""The reward components, in the order the default weights and the reward functions use."""

RewardFunc = Callable[..., list[float]]


@dataclass
class TRLEnvironment:
    """What a TRL launcher needs: the data, the reward functions and their default weights."""

    train_dataset: Any
    """A `datasets.Dataset` with a conversational `prompt` column and the gold `answer`."""
    reward_funcs: dict[str, RewardFunc]
    """One reward function per component, keyed (and `__name__`d) by the component name."""
    reward_weights: dict[str, float]
    """The weights that make the weighted sum the environment's own `reward`."""
    environment_factory: Callable[[], Any] | None = None
    """Single-turn: no TRL environment (the multi-turn fathom-rlm adapter sets one)."""
    close: Callable[[], None] = field(default=lambda: None)
    """Stops the grader's worker processes."""


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
    return {key: _component_function(key, scorer) for key in REWARD_KEYS}


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


def _component_function(key: str, scorer: _BatchScorer) -> RewardFunc:
    def reward(
        prompts: Sequence[Any],
        completions: Sequence[Any],
        answer: Sequence[str],
        completion_ids: Sequence[Sequence[int]] | None = None,
        **_: Any,
    ) -> list[float]:
        return [scores[key] for scores in scorer.scores(completions, answer, completion_ids)]

    # TRL names each reward in its logs by the function's __name__.
    reward.__name__ = reward.__qualname__ = key
    reward.__doc__ = f"The core's `{key}` of each completion (TRL reward-function signature)."
    return reward


class _BatchScorer:
    """Scores a batch once; TRL calls every reward function on the same batch in turn."""

    def __init__(self, config: GSM8KConfig, grader: MathGrader) -> None:
        self._config = config
        self._grader = grader
        self._lock = threading.Lock()
        self._last: tuple[tuple, list[dict[str, float]]] | None = None

    def scores(
        self,
        completions: Sequence[Any],
        answers: Sequence[str],
        completion_ids: Sequence[Sequence[int]] | None,
    ) -> list[dict[str, float]]:
        if len(answers) != len(completions):
            raise ValueError(f"{len(completions)} completions but {len(answers)} answers")
        texts = [completion_text(c) for c in completions]
        tokens = [len(ids) for ids in completion_ids] if completion_ids is not None else None
        key = (tuple(texts), tuple(str(a) for a in answers), tuple(tokens or ()))
        with self._lock:
            if self._last is not None and self._last[0] == key:
                return self._last[1]
            scored = [
                score_completion(
                    text,
                    str(gold),
                    self._grader,
                    self._config,
                    reported_tokens=tokens[index] if tokens is not None else None,
                )
                for index, (text, gold) in enumerate(zip(texts, answers, strict=True))
            ]
            self._last = (key, scored)
            return scored
