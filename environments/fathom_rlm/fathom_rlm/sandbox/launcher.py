"""Parent side of the warm fork server: start it, hand it spawn requests, replace it if it dies.

One fork server runs per network mode (in a fresh network namespace or not). It is a plain child
of this process; if it dies (killed from outside, a bug), the next session start finds it gone
and starts a new one, and a start that was in flight is retried once on the new one.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import itertools
import json
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Any


class SandboxError(Exception):
    """The sandbox could not do what was asked (start failed, variable missing, closed...)."""


_BOOT = """\
import sys, types
sys.path.append(sys.argv[2])
pkg = types.ModuleType("_fathom_sandbox")
pkg.__path__ = [sys.argv[1]]
sys.modules["_fathom_sandbox"] = pkg
from _fathom_sandbox.forkserver import zygote_main
zygote_main(int(sys.argv[3]), sys.argv[4] == "1")
"""


def interpreter_path() -> str:
    # The real binary, never a version-manager shim (a shim adds ~50 ms per start).
    return os.path.realpath(sys.executable)


def _restricted_python_root() -> str:
    spec = importlib.util.find_spec("RestrictedPython")
    if spec is None or not spec.submodule_search_locations:
        raise SandboxError("RestrictedPython is not installed")
    return os.path.dirname(next(iter(spec.submodule_search_locations)))


_REQUEST_IDS = itertools.count(1)
_CONTROL_TIMEOUT_S = 10.0


class ForkServer:
    """A warm `python -I -S` that has imported everything and forks one worker per session."""

    def __init__(self, netns: bool, timeout: float) -> None:
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [
                    interpreter_path(),
                    "-I",
                    "-S",
                    "-c",
                    _BOOT,
                    os.path.dirname(os.path.abspath(__file__)),
                    _restricted_python_root(),
                    str(child_sock.fileno()),
                    "1" if netns else "0",
                ],
                env={},  # nothing from the parent's environment (API keys) gets through
                pass_fds=(child_sock.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
                cwd="/",
            )
        finally:
            child_sock.close()
        self.sock = parent_sock
        # Pairs each request with its reply (`_ask`); sends without a reply take no lock.
        self.lock = threading.Lock()
        parent_sock.settimeout(timeout)
        try:
            hello = parent_sock.recv(1 << 16)
        except OSError as exc:
            self.close()
            raise SandboxError(f"sandbox fork server did not start: {exc}") from None
        if not hello:
            self.close()
            raise SandboxError("sandbox fork server exited during start-up")
        # Never block forever on a wedged server; a timeout is reported as its death.
        parent_sock.settimeout(_CONTROL_TIMEOUT_S)
        self.caps: dict[str, Any] = json.loads(hello)
        self.netns_requested = netns

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self, config: dict[str, Any], fds: list[int]) -> None:
        # No lock: a SEQPACKET message goes whole, and the event loop must never wait for a
        # thread that holds the lock while it waits for a reply (`_ask`).
        socket.send_fds(self.sock, [json.dumps(config).encode()], fds)

    def kill(self, token: str) -> None:
        """SIGKILL the worker spawned with `token`; for when no pidfd could be opened for it.

        The fork server signals only a child it has not reaped yet, so the signal cannot reach
        a process that reused the worker's pid.
        """
        self.sock.send(json.dumps({"op": "kill", "token": token}).encode())  # no lock: see spawn

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request/reply over the control socket; SandboxError if the server is gone."""
        request = {**request, "id": next(_REQUEST_IDS)}
        with self.lock:
            try:
                self.sock.send(json.dumps(request).encode())
                while True:
                    raw = self.sock.recv(1 << 16)
                    if not raw:
                        raise SandboxError("the sandbox fork server has exited")
                    reply = json.loads(raw)
                    # A reply to an earlier request that timed out: skip it.
                    if isinstance(reply, dict) and reply.get("id") == request["id"]:
                        return reply
            except (OSError, ValueError) as exc:
                raise SandboxError(f"the sandbox fork server did not answer: {exc}") from None

    def cpu_stats(self) -> dict[str, float]:
        reply = self._ask({"op": "stats"})
        return {"self": float(reply["self"]), "children": float(reply["children"])}

    def exit_status(self, token: str, wait_s: float) -> dict[str, Any]:
        """How the worker spawned with `token` ended, waiting up to `wait_s` for it to end.

        Blocking: call it from a thread. {"state": "live"} if it is still running.
        """
        deadline = time.monotonic() + wait_s
        while True:
            reply = self._ask({"op": "exit_status", "token": token})
            if reply.get("state") != "live" or time.monotonic() >= deadline:
                return reply
            time.sleep(0.01)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()  # EOF tells the server to exit; its workers die with it
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


SERVERS: dict[bool, ForkServer] = {}
_SERVERS_LOCK = threading.Lock()


def fork_server(netns: bool, timeout: float = 30.0) -> ForkServer:
    server = SERVERS.get(netns)
    if server is not None and server.alive():
        return server
    with _SERVERS_LOCK:
        server = SERVERS.get(netns)
        if server is None or not server.alive():
            if server is not None:
                server.close()
            server = ForkServer(netns, timeout)
            SERVERS[netns] = server
        return server


def shutdown_fork_servers() -> None:
    """Stop the warm fork servers (and with them any worker still alive)."""
    with _SERVERS_LOCK:
        servers = list(SERVERS.values())
        SERVERS.clear()
    for server in servers:
        server.close()


atexit.register(shutdown_fork_servers)


def fork_server_cpu_seconds() -> float:
    """CPU seconds used so far by the live fork servers and every worker they have reaped.

    A worker is counted once it has exited (a closed session's worker has: `close()` waits).
    Benchmarks add this to the parent's own CPU time.
    """
    with _SERVERS_LOCK:
        servers = [s for s in SERVERS.values() if s.alive()]
    total = 0.0
    for server in servers:
        stats = server.cpu_stats()
        total += stats["self"] + stats["children"]
    return total


def died_within(server: ForkServer, seconds: float) -> bool:
    """Whether `server` has exited or exits within `seconds` (blocking: run it in a thread)."""
    try:
        server.proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return False
    return True
