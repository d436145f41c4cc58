"""The typed client of fathom-rlm's OpenEnv server: actions are `FathomAction`s, observations
come back as `FathomObservation`s and the state as `FathomState`.

    async with FathomEnvClient("http://127.0.0.1:8000", token=TOKEN) as env:
        first = await env.reset(task_index=0)
        result = await env.step(FathomAction(tool="repl", code="print(len(doc))"))
        print(result.observation.output)
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv_guard.client import TokenClient

from fathom_rlm.openenv.models import FathomAction, FathomObservation, FathomState


class FathomEnvClient(TokenClient[FathomAction, FathomObservation, FathomState]):
    """One session of the server (one rollout per `reset`), with an optional bearer token."""

    def _step_payload(self, action: FathomAction) -> dict[str, Any]:
        # Only the fields the caller set: the server reads an absent field as the model's
        # omission (a missing `code`, say), as it would a raw tool call's.
        return action.model_dump(exclude_unset=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[FathomObservation]:
        done, reward = payload.get("done", False), payload.get("reward")
        observation = FathomObservation.model_validate(
            {**payload.get("observation", {}), "done": done, "reward": reward}
        )
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> FathomState:
        return FathomState.model_validate(payload)
