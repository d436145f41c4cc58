"""gsm8k-multireward's OpenEnv environment: one session is one question.

`reset` picks a row and returns its prompt (system message and question); the one action,
`answer`, carries the model's reply (and, when the endpoint reported it, its completion tokens),
which is graded by the core. The final observation carries the reward (`correct_answer` +
`length_reward_weight` x `length_reward`) and both components under their names, so a trainer
can normalise each (GDPO) or use the sum (GRPO).

The math-verify pool is the server process's (one per process, workers started on the first
grading) and closes with the server (`close_graders`).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from typing import Any

from gsm8k_multireward._vendor.openenv_guard import LoopEnvironment, row_index
from gsm8k_multireward.config import GSM8KConfig
from gsm8k_multireward.data import build_prompt, load_examples
from gsm8k_multireward.grading import MathGrader
from gsm8k_multireward.openenv.models import Gsm8kAction, Gsm8kObservation, Gsm8kState
from gsm8k_multireward.rewards import CORRECT_ANSWER, LENGTH_REWARD, REWARD, ascore_completion


@dataclass(frozen=True)
class ServerOptions:
    config: GSM8KConfig = field(default_factory=GSM8KConfig)


_ROWS: dict[str, list[dict[str, Any]]] = {}
_GRADERS: dict[tuple[int, float], MathGrader] = {}


def load_rows(config: GSM8KConfig) -> list[dict[str, Any]]:
    """The configured rows, loaded once per process and config."""
    key = repr(config)
    if key not in _ROWS:
        _ROWS[key] = load_examples(config)
    return _ROWS[key]


def _grader(config: GSM8KConfig) -> MathGrader:
    key = (config.math_verify_max_workers, config.math_verify_timeout)
    if key not in _GRADERS:
        _GRADERS[key] = MathGrader(max_workers=key[0], timeout=key[1])
    return _GRADERS[key]


def close_graders() -> None:
    """Close this process's graders and their math-verify pools (at server shutdown)."""
    graders = list(_GRADERS.values())
    _GRADERS.clear()
    for grader in graders:
        grader.close()


class Gsm8kEnvironment(LoopEnvironment[Gsm8kAction, Gsm8kObservation, Gsm8kState]):
    """One question per session; stateless between sessions apart from the shared grader."""

    env_name = "gsm8k-multireward"

    def __init__(self, options: ServerOptions) -> None:
        super().__init__()
        self.options = options
        self._state = Gsm8kState()
        self._row: dict[str, Any] | None = None

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_index: int | None = None,
        **kwargs: Any,
    ) -> Gsm8kObservation:
        """Pose row `task_index` (else `seed` modulo the row count, else a random row)."""
        config = self.options.config
        rows = await asyncio.to_thread(load_rows, config)
        task_index = row_index(len(rows), task_index, seed)
        self._row = rows[task_index]
        self._state = Gsm8kState(
            episode_id=episode_id or uuid.uuid4().hex,
            task_index=task_index,
            question=self._row["question"],
        )
        return Gsm8kObservation(messages=build_prompt(self._row["question"], config.system_prompt))

    async def step_async(
        self, action: Gsm8kAction, timeout_s: float | None = None, **kwargs: Any
    ) -> Gsm8kObservation:
        if self._row is None:
            raise RuntimeError("no episode: call reset() before step()")
        if self._state.done:
            raise RuntimeError("the episode is over: call reset() to start another")
        self._state.step_count += 1
        if action.tool != "answer":
            reason = f"Error: unknown tool {action.tool[:40]!r}; the only action is answer."
            return Gsm8kObservation(error=reason)
        config = self.options.config
        scores = await ascore_completion(
            action.message,
            self._row["answer"],
            _grader(config),
            config,
            reported_tokens=action.completion_tokens,
        )
        self._state.done = True
        return Gsm8kObservation(
            done=True,
            reward=scores[REWARD],
            rewards={CORRECT_ANSWER: scores[CORRECT_ANSWER], LENGTH_REWARD: scores[LENGTH_REWARD]},
        )

    @property
    def state(self) -> Gsm8kState:
        return self._state


__all__ = ["Gsm8kEnvironment", "ServerOptions", "close_graders", "load_rows"]
