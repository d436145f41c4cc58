"""openenv-core's clients with a bearer token on their WebSocket handshake.

`TokenClient` is the base of an environment's typed client (it subclasses openenv-core's
`EnvClient`, so the environment still supplies `_step_payload`, `_parse_result` and
`_parse_state`); `TokenEnvClient` is openenv-core's generic, dictionary-based client with the
same handshake.
"""

from __future__ import annotations

from typing import Any, Self, TypeVar

from openenv.core.env_client import EnvClient
from openenv.core.generic_client import GenericEnvClient
from websockets.asyncio.client import connect as ws_connect

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")


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


class TokenEnvClient(TokenClient[dict[str, Any], dict[str, Any], dict[str, Any]], GenericEnvClient):
    """`GenericEnvClient` (actions and observations as dictionaries) with `TokenClient`'s
    handshake."""
