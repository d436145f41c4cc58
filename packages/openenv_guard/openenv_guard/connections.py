"""Connections before any request exists: uvicorn's HTTP/1.1 protocol (h11) with a deadline for
a request's line and headers, a cap on open connections and a cap per address, so a client that
opens connections and sends nothing, or its headers a byte at a time, cannot hold the server's
descriptors, nor, from one address, every connection slot."""

from __future__ import annotations

import asyncio
import ipaddress
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from .settings import GuardSettings


def _refusal(error: bytes, code: bytes) -> bytes:
    body = b'{"error":"%s","code":"%s"}' % (error, code)
    return (
        b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
        b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    )


_OVER_CAPACITY = _refusal(b"the server has too many open connections", b"TOO_MANY_CONNECTIONS")
_OVER_ADDRESS_CAP = _refusal(
    b"too many open connections from this address", b"TOO_MANY_CONNECTIONS_FROM_ADDRESS"
)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with `header_timeout_s`, `max_connections` and
    `max_connections_per_address` (set on the class `guarded_protocol` makes; `exempt`: the
    trusted proxies' networks). The header deadline runs from the connection's start and again
    from each response's end; a WebSocket, once upgraded, is the guard's `/ws` session's."""

    header_timeout_s: float = 10.0
    max_connections: int = 512
    max_connections_per_address: int = 64
    exempt: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = ()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        refusal = None
        if len(self.connections) > self.max_connections:
            refusal = _OVER_CAPACITY
        elif self._from_address() > self.max_connections_per_address:
            refusal = _OVER_ADDRESS_CAP
        if refusal is not None:
            transport.write(refusal)
            transport.close()
            return
        self._arm_header_timer()

    def _from_address(self) -> int:
        """Open connections (HTTP and upgraded WebSockets) from this one's address, itself
        included; 0 for an exempt address or one the transport does not name."""
        host = self.client[0] if self.client else None
        if host is None:
            return 0
        try:
            if any(ipaddress.ip_address(host) in net for net in self.exempt):
                return 0
        except ValueError:
            pass  # not an IP address (a Unix socket's path): counted as one address
        return sum(
            1 for c in self.connections if (getattr(c, "client", None) or (None,))[0] == host
        )

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
    """`GuardedH11Protocol` with the server's header deadline and connection caps."""
    limits: dict[str, Any] = {
        "header_timeout_s": settings.header_timeout_s,
        "max_connections": settings.max_connections,
        "max_connections_per_address": settings.max_connections_per_address,
        "exempt": tuple(ipaddress.ip_network(p, strict=False) for p in settings.trusted_proxies),
    }
    return type("GuardedH11Protocol", (GuardedH11Protocol,), limits)


__all__ = ["GuardedH11Protocol", "guarded_protocol"]
