"""Who is asking and how much they may still do: the client of the running request, per-client
sliding-window quotas on model-endpoint use, per-session endpoint budgets, and a bounded
executor for work too slow for the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from .settings import GuardSettings

T = TypeVar("T")


@dataclass(frozen=True)
class Client:
    """The identity quotas are charged to: a token's digest, or the peer address without auth."""

    name: str
    authenticated: bool


_CURRENT: contextvars.ContextVar[Client | None] = contextvars.ContextVar(
    "openenv_guard_client", default=None
)


def current_client() -> Client | None:
    """The client of the request or `/ws` session being served (None outside a guarded app)."""
    return _CURRENT.get()


@contextlib.contextmanager
def serving(client: Client) -> Iterator[None]:
    """Make `client` the `current_client()` of the request or session served inside."""
    token = _CURRENT.set(client)
    try:
        yield
    finally:
        _CURRENT.reset(token)


class QuotaExceeded(Exception):
    """A quota is used up; the message says which and when it frees."""


class ClientQuotas:
    """Per-client sessions in use and endpoint use over a sliding window; one per server,
    used only on its event loop (so no lock)."""

    def __init__(self, settings: GuardSettings, clock: Callable[[], float] = time.monotonic):
        self.settings = settings
        self.clock = clock
        self.sessions: Counter[str] = Counter()
        self._use: dict[str, deque[list[float]]] = {}  # [when, sub-calls, tokens] per booking
        self._resets: dict[str, tuple[float, float]] = {}  # client -> (tokens left, when)

    def take_reset(self, client: Client) -> float:
        """Take one of the client's resets (a token bucket of `client_reset_burst` refilled at
        `client_reset_rate` per second): 0 if taken, else the seconds until one is free."""
        rate, burst = self.settings.client_reset_rate, self.settings.client_reset_burst
        now = self.clock()
        left, then = self._resets.get(client.name, (float(burst), now))
        left = min(float(burst), left + (now - then) * rate)
        if left < 1:
            self._resets[client.name] = (left, now)
            return (1 - left) / rate
        self._resets[client.name] = (left - 1, now)
        return 0.0

    def open_session(self, client: Client) -> bool:
        """Take one of the client's session slots; False when all are in use."""
        if self.sessions[client.name] >= self.settings.max_sessions_per_client:
            return False
        self.sessions[client.name] += 1
        return True

    def close_session(self, client: Client) -> None:
        self.sessions[client.name] -= 1
        if self.sessions[client.name] <= 0:
            del self.sessions[client.name]

    def charge(
        self, client: Client, sub_calls: int, tokens: int, check: bool = True
    ) -> list[float]:
        """Book endpoint use, or raise QuotaExceeded (booking nothing) if it would go over;
        `check=False` books use that already happened. Returns the booking, which `settle`
        can correct once the use is known."""
        if check:
            self._check(client, sub_calls, tokens)
        booking = [self.clock(), sub_calls, tokens]
        self._use.setdefault(client.name, deque()).append(booking)
        return booking

    @staticmethod
    def settle(booking: list[float], tokens: int) -> None:
        """Replace a booking's tokens (a reservation) by what was used."""
        booking[2] = tokens

    def _check(self, client: Client, sub_calls: int, tokens: int) -> None:
        used_calls, used_tokens = self.used(client)
        s = self.settings
        if used_calls + sub_calls > s.client_sub_calls:
            raise QuotaExceeded(
                f"this client's sub-call quota ({s.client_sub_calls} per "
                f"{s.quota_window_s:g} s) is used up"
            )
        if used_tokens + tokens > s.client_endpoint_tokens:
            raise QuotaExceeded(
                f"this client's endpoint-token quota ({s.client_endpoint_tokens} per "
                f"{s.quota_window_s:g} s) is used up"
            )

    def used(self, client: Client) -> tuple[int, int]:
        """Sub-calls and tokens booked by the client within the window."""
        window = self._use.get(client.name)
        if not window:
            return 0, 0
        horizon = self.clock() - self.settings.quota_window_s
        while window and window[0][0] <= horizon:
            window.popleft()
        return int(sum(w[1] for w in window)), int(sum(w[2] for w in window))


@dataclass
class Reservation:
    """Tokens held for one sub-call until it is settled."""

    tokens: int
    booking: list[float]


class SessionBudget:
    """One session's endpoint budget, charged to its client's quotas as well. A sub-call
    reserves its most (prompt and `max_tokens`) before it is sent, checked and booked in one
    step on the event loop, so concurrent sub-calls cannot all pass a check that only one fits;
    it is settled at what the endpoint reports."""

    def __init__(self, quotas: ClientQuotas, client: Client) -> None:
        self.quotas = quotas
        self.client = client
        self.tokens = 0

    def reserve(self, tokens: int) -> Reservation:
        """Hold `tokens` for one sub-call, or raise QuotaExceeded (holding nothing)."""
        limit = self.quotas.settings.session_endpoint_tokens
        if self.tokens + tokens > limit:
            raise QuotaExceeded(f"this session's endpoint-token budget ({limit}) is used up")
        booking = self.quotas.charge(self.client, 1, tokens)
        self.tokens += tokens
        return Reservation(tokens, booking)

    def settle(self, reservation: Reservation, tokens: int) -> None:
        """Charge what the sub-call used instead of what it reserved (more, if the endpoint
        went past `max_tokens`)."""
        self.tokens += tokens - reservation.tokens
        self.quotas.settle(reservation.booking, tokens)
        reservation.tokens = tokens


_EXECUTOR = ThreadPoolExecutor(max_workers=4, thread_name_prefix="openenv-guard-offload")


async def offload(fn: Callable[..., T], *args: object) -> T:
    """Run `fn(*args)` on a small bounded thread pool (parsing and grading of large inputs), so
    the event loop keeps serving other sessions; the caller's context (its client) goes along."""
    context = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_EXECUTOR, context.run, fn, *args)
