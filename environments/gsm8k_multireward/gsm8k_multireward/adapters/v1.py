"""verifiers v1 API (0.3.x–0.4.x): a `Taskset` and an `Env` that runs locally by default.

- The environment's arguments are typed fields of the taskset config (`--env.taskset.<field>`,
  `[...env.taskset]` in TOML), inherited from `GSM8KConfig`'s fields with their defaults and
  `help`.
  `system_prompt` is v1's own field: a file whose text replaces each task's system prompt
  (`DEFAULT_SYSTEM_PROMPT` otherwise).
- Two rewards, `correct_answer` (weight 1.0) and `length_reward` (weight
  `length_reward_weight`), land by name in `trace.rewards`; `trace.reward` is their weighted
  sum, the core's `total_reward`. They share one grading of the rollout, kept on its state.
- The scoring settings (`SCORING_SETTINGS`) travel in each task's data, because a served worker
  rebuilds tasks from their data and the task config alone; for the same reason the length
  weight is written into the task config (`task.rewards.length_reward.weight`) when the config
  is validated.
- `GSM8KMultirewardTask.validate` is the model-free check verifiers' `validate` command runs:
  the gold answer, boxed as the prompt asks, grades as correct.
- `LocalEnv` defaults the agent to the `null` harness (one chat call, no tools) in a local
  subprocess, so a plain `vf-eval gsm8k-multireward -m <model>` needs no sandbox account.
"""

from __future__ import annotations

import asyncio
from dataclasses import fields
from typing import Any

import verifiers.v1 as vf
from pydantic import ConfigDict, Field, model_validator
from verifiers.v1.harnesses.null import NullHarnessConfig

from gsm8k_multireward._vendor.env_adapters.fields import fields_model
from gsm8k_multireward.config import DEFAULT_SYSTEM_PROMPT, SCORING_SETTINGS, GSM8KConfig
from gsm8k_multireward.data import load_examples
from gsm8k_multireward.grading import MathGrader
from gsm8k_multireward.rewards import CORRECT_ANSWER, LENGTH_REWARD, ascore_completion

ARGUMENTS = tuple(f.name for f in fields(GSM8KConfig) if f.name != "system_prompt")
"""`GSM8KConfig`'s fields that are taskset config fields (v1 has its own `system_prompt`)."""


ScoringFields = fields_model(GSM8KConfig, SCORING_SETTINGS)
"""The scoring settings as pydantic fields: each one's type, default and `help`."""

ArgumentFields = fields_model(GSM8KConfig, ARGUMENTS)
"""The taskset's arguments as pydantic fields: each one's type, default and `help`."""


class _GoldData(vf.TaskData):
    answer: str
    """The gold number."""


class GSM8KMultirewardData(ScoringFields, _GoldData):
    """One question (the `prompt`), its gold number, and the settings it is scored with."""

    def scoring_config(self) -> GSM8KConfig:
        return GSM8KConfig(**{name: getattr(self, name) for name in SCORING_SETTINGS})


class GSM8KMultirewardState(vf.State):
    """In-memory only (verifiers never serialises `trace.state`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    scores: asyncio.Future[dict[str, float]] | None = Field(None, exclude=True)
    """The rollout's grading, done once: the first reward function to ask starts it."""


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


class GSM8KMultirewardTask(vf.Task[GSM8KMultirewardData, GSM8KMultirewardState, vf.TaskConfig]):
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
        state: GSM8KMultirewardState = trace.state
        if state.scores is None:
            usage = trace.usage
            # An endpoint that reports no usage leaves 0 tokens: fall back to characters then.
            reported = usage.completion_tokens if usage is not None else 0
            state.scores = asyncio.ensure_future(self._grade(trace.last_reply, reported or None))
        # Shielded: one reward being cancelled does not cancel the other's grading.
        return await asyncio.shield(state.scores)

    # The two rewards run concurrently and share one grading of the trace.
    @vf.reward(weight=1.0)
    async def correct_answer(self, trace: vf.Trace) -> float:
        return (await self._scores(trace))[CORRECT_ANSWER]

    @vf.reward(weight=1.0)  # replaced by `length_reward_weight` through the task config
    async def length_reward(self, trace: vf.Trace) -> float:
        return (await self._scores(trace))[LENGTH_REWARD]

    async def validate(self, runtime: Any) -> bool:
        """The gold answer, boxed as the system prompt asks, grades as correct."""
        scores = await self._grade(f"\\boxed{{{self.data.answer}}}", None)
        return scores[CORRECT_ANSWER] == 1.0


class GSM8KMultirewardTasksetConfig(ArgumentFields, vf.TasksetConfig):
    """The environment's arguments (`GSM8KConfig`), one field each; the core checks them and the
    length weight goes into the task config when the config is read."""

    def core_config(self) -> GSM8KConfig:
        """The core's config for these arguments (validates them)."""
        return GSM8KConfig(**{name: getattr(self, name) for name in ARGUMENTS})

    @model_validator(mode="after")
    def _apply_length_reward_weight(self) -> GSM8KMultirewardTasksetConfig:
        self.core_config()
        rewards = dict(self.task.rewards)
        pinned = rewards.get(LENGTH_REWARD)
        weight = self.length_reward_weight
        if pinned is not None and pinned.weight not in (None, weight):
            raise ValueError(
                f"task.rewards.{LENGTH_REWARD}.weight={pinned.weight} contradicts "
                f"length_reward_weight={weight}; set only length_reward_weight"
            )
        base = pinned or vf.RewardFunctionConfig()
        rewards[LENGTH_REWARD] = base.model_copy(update={"weight": weight})
        self.task = self.task.model_copy(update={"rewards": rewards})
        return self


class GSM8KMultirewardTaskset(vf.Taskset[GSM8KMultirewardTask, GSM8KMultirewardTasksetConfig]):
    def load(self) -> list[GSM8KMultirewardTask]:
        config = self.config.core_config()
        settings = {name: getattr(config, name) for name in SCORING_SETTINGS}
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
