"""The typed client of gsm8k-multireward's OpenEnv server: actions are `Gsm8kAction`s,
observations come back as `Gsm8kObservation`s and the state as `Gsm8kState`.

    async with Gsm8kEnvClient("http://127.0.0.1:8000", token=TOKEN) as env:
        first = await env.reset(task_index=0)
        result = await env.step(Gsm8kAction(message="... \\\\boxed{42}", completion_tokens=31))
        print(result.reward, result.observation.rewards)
"""

from __future__ import annotations

from typing import Any

from openenv.core.client_types import StepResult
from openenv_guard.client import TokenClient

from gsm8k_multireward.openenv.models import Gsm8kAction, Gsm8kObservation, Gsm8kState


class Gsm8kEnvClient(TokenClient[Gsm8kAction, Gsm8kObservation, Gsm8kState]):
    """One session of the server (one question per `reset`), with an optional bearer token."""

    def _step_payload(self, action: Gsm8kAction) -> dict[str, Any]:
        return action.model_dump(exclude_unset=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Gsm8kObservation]:
        done, reward = payload.get("done", False), payload.get("reward")
        observation = Gsm8kObservation.model_validate(
            {**payload.get("observation", {}), "done": done, "reward": reward}
        )
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> Gsm8kState:
        return Gsm8kState.model_validate(payload)
