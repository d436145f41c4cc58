"""Shared fixtures for the sandbox tests: leak checks around every test module."""

from __future__ import annotations

import os
import time

import pytest
from fathom_rlm.sandbox import SandboxConfig, shutdown_fork_servers
from fathom_rlm.sandbox import session as session_module

UID_BASE = SandboxConfig().uid_base
UID_SPAN = 1 << 23  # larger than any pid_max


def sandbox_pids() -> list[int]:
    """Live processes running under a sandbox uid (only our workers use that range)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        uid = int(line.split()[1])
                        if UID_BASE <= uid < UID_BASE + UID_SPAN or uid == 65534:
                            found.append(int(entry))
                        break
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


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


def wait_until(predicate, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def fork_server_pids() -> set[int]:
    return {server.proc.pid for server in session_module._SERVERS.values()}


@pytest.fixture(scope="module", autouse=True)
def no_leaks_after_module():
    before = set(sandbox_pids())
    yield
    assert wait_until(lambda: not (set(sandbox_pids()) - before)), (
        f"sandbox processes left behind: {set(sandbox_pids()) - before}"
    )
    assert not session_module._WORKDIRS, f"work dirs left: {session_module._WORKDIRS}"


@pytest.fixture(scope="session", autouse=True)
def stop_fork_servers_at_end():
    yield
    servers = fork_server_pids()
    shutdown_fork_servers()
    mine = set(children_of(os.getpid()))
    assert not (mine & servers), "fork server still running after shutdown"
