"""The typed client of gsm8k-multireward's OpenEnv server: actions are `Gsm8kAction`s,
observations come back as `Gsm8kObservation`s and the state as `Gsm8kState`.

    async with Gsm8kEnvClient("http://127.0.0.1:8000", token=TOKEN) as env:
        first = await env.reset(task_index=0)
        result = await env.step(Gsm8kAction(message="... \\\\boxed{42}", completion_tokens=31))
        print(result.reward, result.observation.rewards)
"""

from __future__ import annotations

from gsm8k_multireward._vendor.openenv_guard.client import ModelClient
from gsm8k_multireward.openenv.models import Gsm8kAction, Gsm8kObservation, Gsm8kState


class Gsm8kEnvClient(ModelClient[Gsm8kAction, Gsm8kObservation, Gsm8kState]):
    """One session of the server (one question per `reset`), with an optional bearer token."""

    observation_model = Gsm8kObservation
    state_model = Gsm8kState
