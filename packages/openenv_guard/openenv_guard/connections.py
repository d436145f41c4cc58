"""Connections before any request exists: uvicorn's HTTP/1.1 protocol (h11) with a deadline for
a request's line and headers and a cap on open connections, so a client that opens connections
and sends nothing, or its headers a byte at a time, cannot hold the server's descriptors."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .settings import GuardSettings

_BUSY = b'{"error":"the server has too many open connections","code":"TOO_MANY_CONNECTIONS"}'
_OVER_CAPACITY = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_BUSY), _BUSY)
)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with `header_timeout_s` and `max_connections` (set on the class
    `guarded_protocol` makes). The header deadline runs from the connection's start and again
    from each response's end; a WebSocket, once upgraded, is the guard's `/ws` session's."""

    header_timeout_s: float = 10.0
    max_connections: int = 512

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        if len(self.connections) > self.max_connections:
            transport.write(_OVER_CAPACITY)
            transport.close()
            return
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()  # the next request on a kept-alive connection

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(
            self.header_timeout_s, self._headers_late, self.cycle
        )

    def _cancel_header_timer(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _headers_late(self, cycle_then: Any) -> None:
        """Close the connection if no request's headers have arrived since the timer started
        and none is being served (a new request starts a new cycle, a pipelined one may have
        started just before the timer; an upgraded WebSocket has another protocol)."""
        self._header_timer = None
        if self.transport.is_closing() or self.transport.get_protocol() is not self:
            return
        serving = cycle_then is not None and not cycle_then.response_complete
        if self.cycle is cycle_then and not serving:
            self.transport.close()


def guarded_protocol(settings: GuardSettings) -> type[GuardedH11Protocol]:
    """`GuardedH11Protocol` with the server's header deadline and connection cap."""
    limits = {"header_timeout_s": settings.header_timeout_s}
    limits["max_connections"] = settings.max_connections
    return type("GuardedH11Protocol", (GuardedH11Protocol,), limits)


__all__ = ["GuardedH11Protocol", "guarded_protocol"]
