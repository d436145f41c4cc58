"""openenv-core's generic client with a bearer token on its WebSocket handshake."""

from __future__ import annotations

from typing import Any

from openenv.core.generic_client import GenericEnvClient
from websockets.asyncio.client import connect as ws_connect


class TokenEnvClient(GenericEnvClient):
    """`GenericEnvClient` that sends `Authorization: Bearer <token>` when it connects."""

    def __init__(self, base_url: str, token: str | None = None, **kwargs: Any) -> None:
        super().__init__(base_url=base_url, **kwargs)
        self._token = token

    async def connect(self) -> TokenEnvClient:
        if self._ws is None:
            headers = {"Authorization": f"Bearer {self._token}"} if self._token else None
            try:
                self._ws = await ws_connect(
                    self._ws_url,
                    open_timeout=self._connect_timeout,
                    max_size=self._max_message_size,
                    additional_headers=headers,
                )
            except Exception as exc:
                raise ConnectionError(f"Failed to connect to {self._ws_url}: {exc}") from exc
        return self
