"""fathom-rlm on the verifiers v1 API (0.3.1 and 0.4.0): taskset, task, harness and a local env.

* `FathomTaskset` serves one task per dataset row. Its config fields are the environment's
  arguments (`--env.taskset.<field>`, or `[...env.taskset]` in a TOML).
* `FathomData` carries the row (seed, doc_tokens, question, gold...) and the arguments, never the
  document: the harness regenerates the document from its seed.
* `FathomHarness` (in `fathom_rlm.adapters.harness`) runs the core agent loop against the
  rollout's interception endpoint, so root turns and sub-calls are all traced. Because the package
  exports it, it is the taskset's default harness.
* `FathomEnv` is the single-agent env with a local default runtime (`subprocess`), so a plain
  `vf-eval fathom-rlm -m <model> --client.base-url <url>` runs on this machine.
* Scores: `reward` is a `@vf.reward` with weight 1 (the core's gated product), and every component
  and metric is recorded by one `@vf.metric` under its stable name in `trace.metrics`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from pydantic import ConfigDict, Field

from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.adapters.harness import FathomHarness
from fathom_rlm.adapters.scoring import REWARD_NAME, build_rows, score
from fathom_rlm.agent import RolloutRecord
from fathom_rlm.serving import close_serving_scope

logger = logging.getLogger(__name__)

_DEFAULTS = FathomArguments()


class FathomData(vf.TaskData):
    row: dict[str, Any]
    """The dataset row: question, gold and aliases, seed, family, depth, spans, doc_tokens."""
    arguments: dict[str, Any]
    """The environment's arguments the harness and the scorer need (caps, doc size)."""


class FathomState(vf.State):
    """In-memory only (verifiers never serialises `trace.state`): the harness's rollout record."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    record: RolloutRecord | None = None
    scores: dict[str, float] | None = None


class FathomTask(vf.Task[FathomData, FathomState, vf.TaskConfig]):
    """Scores one rollout with the core's `score_rollout`."""

    async def _scores(self, trace: Any) -> dict[str, float]:
        state: FathomState = trace.state
        if state.scores is None:
            if state.record is None and trace.stop_condition is None:
                raise RuntimeError(
                    "fathom-rlm scores only rollouts run by its own harness (harness id "
                    "'fathom-rlm'); this rollout left no record"
                )
            arguments = FathomArguments(**self.data.arguments)
            # In a worker thread: evidence recall may regenerate the document (~50-100 ms).
            scores = await asyncio.to_thread(score, state.record, self.data.row, arguments)
            if state.scores is None:
                state.scores = scores
        return state.scores

    @vf.reward(weight=1.0)
    async def reward(self, trace: Any) -> float:
        return (await self._scores(trace))[REWARD_NAME]

    @vf.metric
    async def fathom_signals(self, trace: Any) -> dict[str, float]:
        return {k: v for k, v in (await self._scores(trace)).items() if k != REWARD_NAME}


class FathomTasksetConfig(vf.TasksetConfig):
    """The environment's arguments; see `fathom_rlm.adapters.arguments.FathomArguments`."""

    split: str = _DEFAULTS.split
    num_examples: int | None = _DEFAULTS.num_examples
    doc_tokens: int = Field(_DEFAULTS.doc_tokens, gt=0)
    family_mix: dict[str, float] | None = _DEFAULTS.family_mix
    sub_max_completion_tokens: int | None = _DEFAULTS.sub_max_completion_tokens
    max_turns: int = _DEFAULTS.max_turns
    sub_max_turns: int = _DEFAULTS.sub_max_turns
    max_sub_calls: int = _DEFAULTS.max_sub_calls
    max_slice_chars: int = _DEFAULTS.max_slice_chars
    max_depth: int = _DEFAULTS.max_depth
    max_answer_chars: int = _DEFAULTS.max_answer_chars
    max_code_chars: int = _DEFAULTS.max_code_chars
    max_prompt_chars: int = _DEFAULTS.max_prompt_chars
    max_sub_answer_chars: int = _DEFAULTS.max_sub_answer_chars
    max_tool_calls_per_turn: int = _DEFAULTS.max_tool_calls_per_turn
    time_budget_s: float | None = _DEFAULTS.time_budget_s

    def arguments(self) -> FathomArguments:
        names = FathomArguments.__dataclass_fields__
        return FathomArguments(**{name: getattr(self, name) for name in names})


class FathomTaskset(vf.Taskset[FathomTask, FathomTasksetConfig]):
    """One task per row of the configured split."""

    def load(self) -> Iterator[FathomTask]:
        arguments = self.config.arguments()
        shared = arguments.as_dict()
        for row in build_rows(arguments):
            data = FathomData(prompt=row["question"], row=row, arguments=shared)
            yield FathomTask(data, self.config.task)


class FathomEnvConfig(vf.SingleAgentEnvConfig):
    """Defaults that keep a plain `vf-eval fathom-rlm` on this machine: the taskset's own harness
    (unset = the package's exported one) in the local subprocess runtime."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class FathomEnv(vf.Env[FathomEnvConfig]):
    """The single-agent episode: one rollout of the agent on the task.

    Its serving lifetime is the process's (an env-server worker's, or an in-process eval's):
    the sandbox fork server and scratch root start with the first rollout and close here.
    """

    async def stop(self) -> None:
        await asyncio.to_thread(close_serving_scope)

    async def run(self, task: vf.Task, agents: Any) -> None:
        await agents.agent.run(task)


__all__ = ["FathomEnv", "FathomHarness", "FathomTaskset"]
