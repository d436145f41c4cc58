"""openenv-core's clients with a bearer token on their WebSocket handshake.

`TokenClient` subclasses openenv-core's `EnvClient` (a subclass supplies `_step_payload`,
`_parse_result` and `_parse_state`); `ModelClient` supplies them for an environment whose wire
types are openenv-core's pydantic models, so its typed client only names its observation and
state classes; `TokenEnvClient` is openenv-core's generic, dictionary-based client with the same
handshake.
"""

from __future__ import annotations

from typing import Any, Self, TypeVar

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from openenv.core.env_server.types import Action, Observation, State
from openenv.core.generic_client import GenericEnvClient
from websockets.asyncio.client import connect as ws_connect

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")
ActionT = TypeVar("ActionT", bound=Action)
ObservationT = TypeVar("ObservationT", bound=Observation)
StateModelT = TypeVar("StateModelT", bound=State)


class TokenClient(EnvClient[ActT, ObsT, StateT]):
    """`EnvClient` that sends `Authorization: Bearer <token>` when it connects (nothing without a
    token). `ping_interval_s=None` turns the WebSocket keepalive ping off, for a client whose
    event loop may be starved longer than the pong deadline."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        ping_interval_s: float | None = 20.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(base_url=base_url, **kwargs)
        self._token = token
        self._ping_interval_s = ping_interval_s

    async def connect(self) -> Self:
        if self._ws is None:
            headers = {"Authorization": f"Bearer {self._token}"} if self._token else None
            try:
                self._ws = await ws_connect(
                    self._ws_url,
                    open_timeout=self._connect_timeout,
                    max_size=self._max_message_size,
                    additional_headers=headers,
                    ping_interval=self._ping_interval_s,
                )
            except Exception as exc:
                raise ConnectionError(f"Failed to connect to {self._ws_url}: {exc}") from exc
        return self


class ModelClient(TokenClient[ActionT, ObservationT, StateModelT]):
    """`TokenClient` whose action, observation and state are openenv-core's pydantic models; a
    subclass names its observation and state classes."""

    observation_model: type[ObservationT]
    state_model: type[StateModelT]

    def _step_payload(self, action: ActionT) -> dict[str, Any]:
        # Only the fields the caller set: the server reads an absent field as not given (a tool
        # argument the model left out, say), as it would in a raw tool call.
        return action.model_dump(exclude_unset=True)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ObservationT]:
        done, reward = payload.get("done", False), payload.get("reward")
        observation = self.observation_model.model_validate(
            {**payload.get("observation", {}), "done": done, "reward": reward}
        )
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> StateModelT:
        return self.state_model.model_validate(payload)


class TokenEnvClient(TokenClient[dict[str, Any], dict[str, Any], dict[str, Any]], GenericEnvClient):
    """`GenericEnvClient` (actions and observations as dictionaries) with `TokenClient`'s
    handshake."""
