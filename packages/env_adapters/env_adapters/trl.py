"""What a TRL launcher takes from an environment's TRL adapter (`load_trl_environment`), and
the adapter's reward functions in TRL's calling convention.

Nothing here imports TRL: the fields hold what `GRPOTrainer` and `GRPOConfig` are given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

RewardFunc = Callable[..., list[float]]
"""A reward function in TRL's signature: `fn(prompts=..., completions=..., completion_ids=...,
**columns)`, where `columns` are the dataset's other columns and what TRL adds (`trainer_state`;
`environments` with an `environment_factory`)."""


@dataclass(frozen=True)
class RewardBatch:
    """What one call of a reward function by TRL is about."""

    prompts: Sequence[Any]
    completions: Sequence[Any]
    completion_tokens: list[int] | None
    """The lengths of TRL's `completion_ids`; None when TRL passed none."""
    columns: Mapping[str, Any]
    """The dataset's other columns and what TRL adds (`environments`, `trainer_state`...)."""

    def tokens(self, index: int) -> int | None:
        """Completion `index`'s token count, when TRL passed them."""
        return None if self.completion_tokens is None else self.completion_tokens[index]


BatchScores = Callable[[RewardBatch], Sequence[Mapping[str, float]]]
"""Each completion's scores by name, for one batch."""


@dataclass
class TRLEnvironment:
    """The data, one reward function per named score and their default weights; a multi-turn
    environment adds TRL's `environment_factory` and the `GRPOConfig` fields it needs."""

    train_dataset: Any
    """A `datasets.Dataset` with a conversational `prompt` column; TRL passes its other columns
    to the reward functions (and to the environment's `reset`)."""
    reward_funcs: dict[str, RewardFunc]
    """One reward function per named score, keyed (and `__name__`d: TRL logs it so) by the name."""
    reward_weights: dict[str, float]
    """The default weights: the weighted sum of the scores is the environment's own reward."""
    environment_factory: Callable[[], Any] | None = None
    """Multi-turn: makes one tool environment (TRL's `environment_factory`); None: single-turn."""
    trainer_defaults: dict[str, Any] = field(default_factory=dict)
    """`GRPOConfig` fields the environment needs unless the run sets them."""
    close: Callable[[], None] = field(default=lambda: None)
    """Releases what the environment holds (grader workers, sandboxes)."""


def named_rewards(keys: Iterable[str], scores: BatchScores, scored: str) -> dict[str, RewardFunc]:
    """One reward function per key, in TRL's signature and `__name__`d by the key (TRL logs each
    reward under its function's name): the key's score of `scores` for each completion of the
    batch. `scored` names what is scored, for the functions' docstrings ("each completion")."""

    def named(key: str) -> RewardFunc:
        def reward(
            prompts: Sequence[Any],
            completions: Sequence[Any],
            completion_ids: Sequence[Sequence[int]] | None = None,
            **columns: Any,
        ) -> list[float]:
            tokens = [len(ids) for ids in completion_ids] if completion_ids is not None else None
            batch = RewardBatch(prompts, completions, tokens, columns)
            return [by_name[key] for by_name in scores(batch)]

        reward.__name__ = reward.__qualname__ = key
        reward.__doc__ = f"The core's `{key}` of {scored} (TRL's reward-function signature)."
        return reward

    return {key: named(key) for key in keys}
