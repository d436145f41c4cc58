"""Fixtures for the agent tests."""

from __future__ import annotations

from typing import Any

import pytest
from fathom_rlm.sandbox import SandboxSession


@pytest.fixture
def started_sessions(monkeypatch: pytest.MonkeyPatch) -> list[SandboxSession]:
    """Every sandbox session started during the test, in order (real sessions, only recorded)."""
    started: list[SandboxSession] = []
    original = SandboxSession.start.__func__  # type: ignore[attr-defined]

    async def start(cls: Any, *args: Any, **kwargs: Any) -> SandboxSession:
        session = await original(cls, *args, **kwargs)
        started.append(session)
        return session

    monkeypatch.setattr(SandboxSession, "start", classmethod(start))
    return started
