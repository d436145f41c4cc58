"""The typed client of fathom-rlm's OpenEnv server: actions are `FathomAction`s, observations
come back as `FathomObservation`s and the state as `FathomState`.

    async with FathomEnvClient("http://127.0.0.1:8000", token=TOKEN) as env:
        first = await env.reset(task_index=0)
        result = await env.step(FathomAction(tool="repl", code="print(len(doc))"))
        print(result.observation.output)
"""

from __future__ import annotations

from fathom_rlm._vendor.openenv_guard.client import ModelClient
from fathom_rlm.openenv.models import FathomAction, FathomObservation, FathomState


class FathomEnvClient(ModelClient[FathomAction, FathomObservation, FathomState]):
    """One session of the server (one rollout per `reset`), with an optional bearer token."""

    observation_model = FathomObservation
    state_model = FathomState
