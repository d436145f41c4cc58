"""fathom-rlm on the verifiers v1 API (0.3.1 and 0.4.0): taskset, task, harness and a local env.

* `FathomTaskset` serves one task per dataset row. Its config (`FathomTasksetConfig`) inherits
  its fields from `FathomArguments`: one per argument, with the argument's type, default and
  `help` (`--env.taskset.<field>`, or `[...env.taskset]` in a TOML).
* `FathomData` carries the row (seed, doc_tokens, question, gold...) and the arguments, never the
  document: the harness regenerates the document from its seed, or, for a row of a `source`
  file, reads it from the process's document store (making the arguments loads the file).
* `FathomHarness` (in `fathom_rlm.adapters.harness`) runs the core agent loop against the
  rollout's interception endpoint, so root turns and sub-calls are all traced. The harness is
  part of the task: the score reads the rollout record it writes (tool calls, sub-calls, what
  the model was shown), which a trace of messages alone does not hold. It is the taskset's
  default harness, and a rollout that another harness answered fails loudly when scored.
* `FathomEnv` is the single-agent env with a local default runtime (`subprocess`), so a plain
  `vf-eval fathom-rlm -m <model> --client.base-url <url>` runs on this machine.
* Scores: `reward` is a `@vf.reward` with weight 1 (the core's gated product), and every component
  and metric is recorded by one `@vf.metric` under its stable name in `trace.metrics`.
* `FathomTask.validate` is the model-free check verifiers' `validate` command runs: the gold
  answer scores as correct, with its supporting spans inside the regenerated document.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from pydantic import ConfigDict, Field, model_validator

from fathom_rlm._vendor.env_adapters.fields import fields_model
from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.adapters.harness import FathomHarness
from fathom_rlm.adapters.scoring import REWARD_NAME, build_rows, gold_problems, score
from fathom_rlm.agent import RolloutRecord
from fathom_rlm.documents.tasks.record import TaskRecord
from fathom_rlm.serving import close_serving_scope
from fathom_rlm.userdata.grading import task_question

logger = logging.getLogger(__name__)


class FathomData(vf.TaskData):
    row: dict[str, Any]
    """The dataset row (`TaskRecord.to_json`): question, gold and aliases, seed, family, depth,
    spans, doc_tokens, region."""
    arguments: dict[str, Any]
    """The environment's arguments the harness and the scorer need (caps, doc size)."""

    @property
    def task_record(self) -> TaskRecord:
        """The row as the typed record every reader uses."""
        return TaskRecord.from_json(self.row)


class FathomState(vf.State):
    """In-memory only (verifiers never serialises `trace.state`)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    record: RolloutRecord | None = None
    """The harness's rollout record, filled in as the rollout runs."""
    scores: asyncio.Future[dict[str, float]] | None = Field(None, exclude=True)
    """The rollout's scores, computed once: the first reward function to ask starts them."""


class FathomTask(vf.Task[FathomData, FathomState, vf.TaskConfig]):
    """Scores one rollout with the core's `score_rollout`."""

    async def _scores(self, trace: Any) -> dict[str, float]:
        state: FathomState = trace.state
        if state.scores is None:
            state.scores = asyncio.ensure_future(self._score(trace))
        # Shielded: one reward function being cancelled does not cancel the others' scoring.
        return await asyncio.shield(state.scores)

    async def _score(self, trace: Any) -> dict[str, float]:
        record = trace.state.record
        if record is None and trace.messages:
            raise RuntimeError(
                "fathom-rlm's harness is part of the task: its score reads the record that "
                "harness (id 'fathom-rlm', the taskset's default) writes, and this rollout was "
                "answered by another harness"
            )
        # No record and no message: nothing ran (stopped before the loop, or verifiers'
        # untouched-task check), which scores as an empty rollout.
        arguments = FathomArguments(**self.data.arguments)
        # In a worker thread: evidence recall may regenerate the document (~50-100 ms).
        return await asyncio.to_thread(score, record, self.data.task_record, arguments)

    @vf.reward(weight=1.0)
    async def reward(self, trace: Any) -> float:
        return (await self._scores(trace))[REWARD_NAME]

    @vf.metric
    async def fathom_signals(self, trace: Any) -> dict[str, float]:
        return {k: v for k, v in (await self._scores(trace)).items() if k != REWARD_NAME}

    async def validate(self, runtime: Any) -> bool:
        """The gold answer is gradable: inside the regenerated document its supporting spans
        exist, and a rollout that was shown them and answered the gold scores as correct."""
        arguments = FathomArguments(**self.data.arguments)
        task = self.data.task_record
        problems = await asyncio.to_thread(gold_problems, task, arguments)
        for problem in problems:
            logger.warning("fathom-rlm task %s: %s", task.question, problem)
        return not problems


FathomArgumentFields = fields_model(FathomArguments, FathomArguments.names())
"""`FathomArguments` as pydantic fields: each argument's type, default and `help`."""


class FathomTasksetConfig(FathomArgumentFields, vf.TasksetConfig):
    """The environment's arguments (`FathomArguments`), one field each, checked when read."""

    def arguments(self) -> FathomArguments:
        return FathomArguments(**{name: getattr(self, name) for name in FathomArguments.names()})

    @model_validator(mode="after")
    def _check_arguments(self) -> FathomTasksetConfig:
        self.arguments()  # a bad value fails when the config is read, before any document
        return self


class FathomTaskset(vf.Taskset[FathomTask, FathomTasksetConfig]):
    """One task per row of the configured split."""

    def load(self) -> Iterator[FathomTask]:
        arguments = self.config.arguments()
        shared = arguments.as_dict()
        for task in build_rows(arguments):
            data = FathomData(prompt=task_question(task), row=task.to_json(), arguments=shared)
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
