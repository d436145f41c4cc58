"""verifiers v1 API (0.3.x–0.4.x): a `Taskset` and an `Env` that runs locally by default.

- The environment's arguments are typed fields of the taskset config (`--env.taskset.<field>`,
  `[...env.taskset]` in TOML). `system_prompt` is v1's own field: a file whose text replaces
  each task's system prompt (`DEFAULT_SYSTEM_PROMPT` otherwise).
- Two rewards, `correct_answer` (weight 1.0) and `length_reward` (weight
  `length_reward_weight`), land by name in `trace.rewards`; `trace.reward` is their weighted
  sum, the core's `total_reward`.
- The scoring settings travel in each task's data, because a served worker rebuilds tasks from
  their data and the task config alone; for the same reason the length weight is written into
  the task config (`task.rewards.length_reward.weight`) when the config is validated.
- `LocalEnv` defaults the agent to the `null` harness (one chat call, no tools) in a local
  subprocess, so a plain `vf-eval gsm8k-multireward -m <model>` needs no sandbox account.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

import verifiers.v1 as vf
from pydantic import model_validator
from verifiers.v1.harnesses.null import NullHarnessConfig

from gsm8k_multireward.config import DEFAULT_SYSTEM_PROMPT, GSM8KConfig
from gsm8k_multireward.data import load_examples
from gsm8k_multireward.grading import MathGrader
from gsm8k_multireward.rewards import CORRECT_ANSWER, LENGTH_REWARD, ascore_completion

_DEFAULTS = GSM8KConfig()


class GSM8KMultirewardData(vf.TaskData):
    """One question (the `prompt`), its gold number, and the settings it is scored with."""

    answer: str
    length_threshold_tokens: int | None = _DEFAULTS.length_threshold_tokens
    chars_per_token: float = _DEFAULTS.chars_per_token
    math_verify_max_workers: int = _DEFAULTS.math_verify_max_workers
    math_verify_timeout: float = _DEFAULTS.math_verify_timeout

    def scoring_config(self) -> GSM8KConfig:
        return GSM8KConfig(
            length_threshold_tokens=self.length_threshold_tokens,
            chars_per_token=self.chars_per_token,
            math_verify_max_workers=self.math_verify_max_workers,
            math_verify_timeout=self.math_verify_timeout,
        )


_GRADERS: dict[tuple[int, float], MathGrader] = {}


def _grader(max_workers: int, timeout: float) -> MathGrader:
    # One grader (and math-verify pool, whose workers start on first use) per process and
    # setting, shared by every task; `LocalEnv.stop` closes them with the serving process.
    grader = _GRADERS.get((max_workers, timeout))
    if grader is None:
        grader = _GRADERS[(max_workers, timeout)] = MathGrader(
            max_workers=max_workers, timeout=timeout
        )
    return grader


def close_graders() -> None:
    """Close this process's graders and their math-verify worker pools."""
    graders = list(_GRADERS.values())
    _GRADERS.clear()
    for grader in graders:
        grader.close()


_GRADINGS: dict[int, tuple[tuple[Any, ...], asyncio.Future[dict[str, float]]]] = {}
"""One grading per live trace (keyed by `id`, dropped when the trace is collected), shared by
the two rewards."""


def _failed(grading: asyncio.Future[Any]) -> bool:
    return grading.done() and (grading.cancelled() or grading.exception() is not None)


class GSM8KMultirewardTask(vf.Task[GSM8KMultirewardData]):
    async def _grade(self, reply: str, reported: int | None) -> dict[str, float]:
        data = self.data
        return await ascore_completion(
            reply,
            data.answer,
            _grader(data.math_verify_max_workers, data.math_verify_timeout),
            data.scoring_config(),
            reported_tokens=reported,
        )

    async def _scores(self, trace: vf.Trace) -> dict[str, float]:
        """Both rewards' scores, graded once per trace: the second reward to ask awaits the
        first one's grading (a trace whose reply or usage changed is graded again)."""
        usage = trace.usage
        # An endpoint that reports no usage leaves 0 tokens: fall back to characters then.
        reported = usage.completion_tokens if usage is not None else 0
        reply = trace.last_reply
        key = (self.data.answer, reply, reported if reported > 0 else None)
        loop = asyncio.get_running_loop()
        memo = _GRADINGS.get(id(trace))
        if memo is None or memo[0] != key or memo[1].get_loop() is not loop or _failed(memo[1]):
            grading = asyncio.ensure_future(self._grade(reply, key[2]))
            try:
                if memo is None:
                    weakref.finalize(trace, _GRADINGS.pop, id(trace), None)
            except TypeError:  # an object without weak references: grade without sharing
                return await grading
            memo = _GRADINGS[id(trace)] = (key, grading)
        # Shielded: one reward being cancelled does not cancel the other's grading.
        return await asyncio.shield(memo[1])

    # The two rewards run concurrently and share one grading of the trace.
    @vf.reward(weight=1.0)
    async def correct_answer(self, trace: vf.Trace) -> float:
        return (await self._scores(trace))[CORRECT_ANSWER]

    @vf.reward(weight=1.0)  # replaced by `length_reward_weight` through the task config
    async def length_reward(self, trace: vf.Trace) -> float:
        return (await self._scores(trace))[LENGTH_REWARD]


class GSM8KMultirewardTasksetConfig(vf.TasksetConfig):
    """The environment's arguments; `GSM8KConfig` documents each one."""

    dataset_name: str = _DEFAULTS.dataset_name
    dataset_subset: str = _DEFAULTS.dataset_subset
    dataset_split: str = _DEFAULTS.dataset_split
    length_threshold_tokens: int | None = _DEFAULTS.length_threshold_tokens
    length_reward_weight: float = _DEFAULTS.length_reward_weight
    chars_per_token: float = _DEFAULTS.chars_per_token
    math_verify_max_workers: int = _DEFAULTS.math_verify_max_workers
    math_verify_timeout: float = _DEFAULTS.math_verify_timeout
    num_examples: int | None = _DEFAULTS.num_examples

    def core_config(self) -> GSM8KConfig:
        """The core's config for these arguments (validates them)."""
        return GSM8KConfig(
            dataset_name=self.dataset_name,
            dataset_subset=self.dataset_subset,
            dataset_split=self.dataset_split,
            length_threshold_tokens=self.length_threshold_tokens,
            length_reward_weight=self.length_reward_weight,
            chars_per_token=self.chars_per_token,
            math_verify_max_workers=self.math_verify_max_workers,
            math_verify_timeout=self.math_verify_timeout,
            num_examples=self.num_examples,
        )

    @model_validator(mode="after")
    def _apply_length_reward_weight(self) -> GSM8KMultirewardTasksetConfig:
        self.core_config()
        rewards = dict(self.task.rewards)
        pinned = rewards.get(LENGTH_REWARD)
        if pinned is not None and pinned.weight not in (None, self.length_reward_weight):
            raise ValueError(
                f"task.rewards.{LENGTH_REWARD}.weight={pinned.weight} contradicts "
                f"length_reward_weight={self.length_reward_weight}; set only length_reward_weight"
            )
        base = pinned or vf.RewardFunctionConfig()
        rewards[LENGTH_REWARD] = base.model_copy(update={"weight": self.length_reward_weight})
        self.task = self.task.model_copy(update={"rewards": rewards})
        return self


class GSM8KMultirewardTaskset(vf.Taskset[GSM8KMultirewardTask, GSM8KMultirewardTasksetConfig]):
    def load(self) -> list[GSM8KMultirewardTask]:
        config = self.config.core_config()
        settings = {
            "length_threshold_tokens": config.length_threshold_tokens,
            "chars_per_token": config.chars_per_token,
            "math_verify_max_workers": config.math_verify_max_workers,
            "math_verify_timeout": config.math_verify_timeout,
        }
        return [
            GSM8KMultirewardTask(
                GSM8KMultirewardData(
                    prompt=row["question"],
                    answer=row["answer"],
                    system_prompt=DEFAULT_SYSTEM_PROMPT,
                    **settings,
                ),
                self.config.task,
            )
            for row in load_examples(config)
        ]


class LocalEnvConfig(vf.SingleAgentEnvConfig):
    """One agent on the `null` harness in a local subprocess (each can still be overridden
    with `--env.agent.harness.id` / `--env.agent.runtime.type`)."""

    agent: vf.AgentConfig = vf.AgentConfig(
        harness=NullHarnessConfig(id="null"), runtime=vf.SubprocessConfig()
    )


class LocalEnv(vf.Env[LocalEnvConfig]):
    """The single-agent env with local defaults. Its serving lifetime is the process's (an
    env-server worker's, or an in-process eval's): the math-verify pool closes with it."""

    async def stop(self) -> None:
        await asyncio.to_thread(close_graders)

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        await agents.agent.run(task)
