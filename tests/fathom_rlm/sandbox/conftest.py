"""Shared fixtures for the sandbox tests: leak checks around every test module.

Every check looks only at this test process's own fork servers, their workers and its own
temporary root, so two suites (or anything else using sandboxes) can run on the machine at once.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time

import pytest
from fathom_rlm.sandbox import ReplResult, SandboxConfig, SandboxSession, shutdown_fork_servers
from fathom_rlm.sandbox import session as session_module
from fathom_rlm.sandbox.config import LLMCallback


def children_of(pid: int, *, zombies: bool = False) -> list[int]:
    """Children of `pid`: the live ones, or with `zombies=True` the exited, unreaped ones."""
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == pid and (fields[0] == "Z") == zombies:
            kids.append(int(entry))
    return kids


@pytest.fixture
def child_processes():
    """`children_of`, for tests that inspect a process's children."""
    return children_of


def run_unsafe(
    document: str,
    code: str,
    *,
    config: SandboxConfig,
    llm: LLMCallback | None = None,
    then: str | None = None,
) -> tuple[ReplResult, ReplResult | None]:
    """Run `code` with plain `exec` in a confined worker (a hostile worker), then the sandboxed
    code `then` in the same session; both results (the second None without `then`)."""

    async def scenario() -> tuple[ReplResult, ReplResult | None]:
        async with await SandboxSession.start(
            document, config=config, llm=llm, _allow_unsafe_exec_for_tests=True
        ) as session:
            result = await session._unsafe_exec_for_tests(code)
            again = await session.run(then) if then is not None else None
            return result, again

    return asyncio.run(scenario())


@pytest.fixture
def unsafe_exec():
    """`run_unsafe`, for tests of what a worker running arbitrary code can and cannot do."""
    return run_unsafe


def wait_until(predicate, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def fork_server_pids() -> set[int]:
    return {server.proc.pid for server in session_module.SERVERS.values()}


def sandbox_pids() -> set[int]:
    """Workers of this process's fork servers, live or exited but not yet reaped."""
    found: set[int] = set()
    for server in fork_server_pids():
        found.update(children_of(server))
        found.update(children_of(server, zombies=True))
    return found


@pytest.fixture(scope="session", autouse=True)
def private_temp_root():
    """Work directories of this run go under a root of its own (checked empty per module)."""
    root = tempfile.mkdtemp(prefix="fathom-sandbox-tests-")
    os.chmod(root, 0o711)  # workers (another uid) must be able to enter their directory
    previous, session_module.WORKDIR_ROOT = session_module.WORKDIR_ROOT, root
    yield root
    session_module.WORKDIR_ROOT = previous
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def no_leaks_after_module(private_temp_root):
    before = sandbox_pids()
    yield
    assert wait_until(lambda: not (sandbox_pids() - before)), (
        f"sandbox processes left behind: {sandbox_pids() - before}"
    )
    assert not session_module.WORKDIRS, f"work dirs left: {session_module.WORKDIRS}"
    left = [d for d in os.listdir(private_temp_root) if d.startswith("fathom-sandbox-")]
    assert not left, f"work dirs left on disk: {left}"


@pytest.fixture(scope="session", autouse=True)
def stop_fork_servers_at_end():
    yield
    servers = fork_server_pids()
    shutdown_fork_servers()
    mine = set(children_of(os.getpid()))
    assert not (mine & servers), "fork server still running after shutdown"
