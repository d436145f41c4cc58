"""Parent side: the fork server, and the async session API one rollout uses.

A session is one worker process (forked from a warm fork server) that holds the document as
`doc` and keeps REPL state between calls. Talking to it costs one pipe round trip per call.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import importlib.util
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from . import protocol

NetworkMode = Literal["auto", "netns", "seccomp", "none"]
LLMCallback = Callable[[str, str], Awaitable[str]]


class SandboxError(Exception):
    """The sandbox could not do what was asked (start failed, variable missing, closed...)."""


class LLMRefused(Exception):
    """Raised by an llm callback that turns a request down without calling a model.

    Its message is shown to the sandboxed code (as `LLMError`), and the time it took counts
    against the call's budget like any other work the code does. Any other exception from the
    callback is reported only by its type, since its text may carry internal details.
    """


@dataclass(frozen=True)
class SandboxConfig:
    """Limits and isolation for one session. Defaults suit a ~200K-token document."""

    call_timeout_s: float = 5.0  # wall clock per run(); only real llm() sub-calls are excluded
    memory_mb: int = 1024  # RLIMIT_AS of the worker
    cpu_seconds: int = 120  # RLIMIT_CPU over the worker's lifetime
    max_output_chars: int = 4000  # printed output beyond this is cut, with a note
    max_open_files: int = 16  # RLIMIT_NOFILE
    max_processes: int = 1  # RLIMIT_NPROC for the worker's uid: no fork, no threads
    max_code_chars: int = 100_000  # longer code is refused before compiling
    kill_grace_s: float = 1.0  # after call_timeout_s + this, the worker is killed
    start_timeout_s: float = 10.0  # worker must be ready within this
    network: NetworkMode = "auto"  # auto: netns if possible, else seccomp, else none
    uid: int | None = None  # None: a distinct uid per worker (uid_base + worker pid)
    uid_base: int = 1_900_000_000
    filesystem_lock: bool = True  # Landlock with no allowed path, when the kernel has it
    syscall_filter: bool = True  # seccomp filter (blocks socket() unless network="none")
    llm_timeout_s: float | None = None  # optional bound on one llm() callback
    max_llm_calls_per_run: int = 32  # further llm() calls in the same run() fail in the worker


@dataclass
class ReplResult:
    output: str
    error: str | None
    wall_s: float
    output_chars: int
    truncated: bool
    timed_out: bool
    touched_document: bool
    llm_calls: int
    llm_wait_s: float = 0.0  # time spent awaiting the llm callback (included in wall_s)
    worker_restarted: bool = False  # this call ran on a fresh worker: earlier state is gone


# ---------------------------------------------------------------------------------------------
# Fork server
# ---------------------------------------------------------------------------------------------

_BOOT = """\
import sys, types
sys.path.append(sys.argv[2])
pkg = types.ModuleType("_fathom_sandbox")
pkg.__path__ = [sys.argv[1]]
sys.modules["_fathom_sandbox"] = pkg
from _fathom_sandbox.worker import zygote_main
zygote_main(int(sys.argv[3]), sys.argv[4] == "1")
"""


def _interpreter() -> str:
    # The real binary, never a version-manager shim (a shim adds ~50 ms per start).
    return os.path.realpath(sys.executable)


def _restricted_python_root() -> str:
    spec = importlib.util.find_spec("RestrictedPython")
    if spec is None or not spec.submodule_search_locations:
        raise SandboxError("RestrictedPython is not installed")
    return os.path.dirname(next(iter(spec.submodule_search_locations)))


class _ForkServer:
    """A warm `python -I -S` that has imported everything and forks one worker per session."""

    def __init__(self, netns: bool, timeout: float) -> None:
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.proc = subprocess.Popen(
                [
                    _interpreter(),
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
        # Re-entrant: a GC finalizer that kills a worker may run on a thread holding it.
        self.lock = threading.RLock()
        parent_sock.settimeout(timeout)
        try:
            hello = parent_sock.recv(1 << 16)
        except OSError as exc:
            self.close()
            raise SandboxError(f"sandbox fork server did not start: {exc}") from None
        if not hello:
            self.close()
            raise SandboxError("sandbox fork server exited during start-up")
        parent_sock.settimeout(None)
        self.caps: dict[str, Any] = json.loads(hello)
        self.netns_requested = netns

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self, config: dict[str, Any], fds: list[int]) -> None:
        with self.lock:
            socket.send_fds(self.sock, [json.dumps(config).encode()], fds)

    def kill(self, token: str) -> None:
        """SIGKILL the worker spawned with `token`; for when no pidfd could be opened for it.

        The fork server signals only a child it has not reaped yet, so the signal cannot reach
        a process that reused the worker's pid.
        """
        with self.lock:
            self.sock.send(json.dumps({"op": "kill", "token": token}).encode())

    def cpu_stats(self) -> dict[str, float]:
        with self.lock:
            self.sock.send(b'{"op":"stats"}')
            reply = json.loads(self.sock.recv(1 << 16))
        return {"self": float(reply["self"]), "children": float(reply["children"])}

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()  # EOF tells the server to exit; its workers die with it
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_SERVERS: dict[bool, _ForkServer] = {}
_SERVERS_LOCK = threading.Lock()


def _fork_server(netns: bool, timeout: float = 30.0) -> _ForkServer:
    server = _SERVERS.get(netns)
    if server is not None and server.alive():
        return server
    with _SERVERS_LOCK:
        server = _SERVERS.get(netns)
        if server is None or not server.alive():
            if server is not None:
                server.close()
            server = _ForkServer(netns, timeout)
            _SERVERS[netns] = server
        return server


def shutdown_fork_servers() -> None:
    """Stop the warm fork servers (and with them any worker still alive)."""
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.close()


atexit.register(shutdown_fork_servers)


def fork_server_cpu_seconds() -> float:
    """CPU seconds used so far by the live fork servers and every worker they have reaped.

    A worker is counted once it has exited (a closed session's worker has: `close()` waits).
    Benchmarks add this to the parent's own CPU time.
    """
    with _SERVERS_LOCK:
        servers = [s for s in _SERVERS.values() if s.alive()]
    total = 0.0
    for server in servers:
        stats = server.cpu_stats()
        total += stats["self"] + stats["children"]
    return total


def _wants_netns(config: SandboxConfig) -> bool:
    return config.network in ("auto", "netns")


def warm_up(config: SandboxConfig | None = None) -> None:
    """Start the fork server now instead of on the first session (it takes ~0.1-0.2 s)."""
    _fork_server(_wants_netns(config or SandboxConfig()))


def _network_isolation(config: SandboxConfig, caps: dict[str, Any]) -> str:
    seccomp = bool(caps.get("seccomp")) and config.syscall_filter
    if config.network in ("auto", "netns") and caps.get("netns"):
        return "netns"
    if config.network == "netns":
        raise SandboxError("network namespace requested but unavailable on this machine")
    if config.network in ("auto", "seccomp") and seccomp:
        return "seccomp"
    if config.network == "seccomp":
        raise SandboxError("seccomp network filter requested but unavailable on this machine")
    return "none"


def isolation_report(config: SandboxConfig | None = None) -> dict[str, object]:
    """What this machine supports and what a session with `config` would use."""
    config = config or SandboxConfig()
    server = _fork_server(_wants_netns(config))
    caps = server.caps
    return {
        "network": _network_isolation(config, caps),
        "netns": bool(caps.get("netns")),
        "network_reachable_in_fork_server": bool(caps.get("network_reachable")),
        "seccomp": bool(caps.get("seccomp")),
        "seccomp_arch": caps.get("seccomp_arch"),
        "landlock_abi": int(caps.get("landlock_abi", 0)),
        "filesystem_lock": bool(caps.get("landlock_abi")) and config.filesystem_lock,
        "uid_switch": bool(caps.get("root")),
        "rlimits": ["AS", "CPU", "FSIZE", "NOFILE", "NPROC", "CORE", "MEMLOCK", "MSGQUEUE"],
        "fork_server_pid": caps.get("pid"),
        "kernel": caps.get("kernel"),
        "python": _interpreter(),
    }


# ---------------------------------------------------------------------------------------------
# Sessions
# ---------------------------------------------------------------------------------------------

_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_PIPE_DEFAULT = 64 * 1024
_PIPE_MAX = 1 << 20  # the usual unprivileged ceiling (/proc/sys/fs/pipe-max-size)

# Every working directory created and not yet removed (tests check it ends empty).
_WORKDIRS: set[str] = set()
_TOKENS = itertools.count(1)


@dataclass
class _WorkerHandle:
    """What must be released when a worker goes away; shared with the GC finalizer."""

    pid: int | None = None
    pidfd: int | None = None
    server: _ForkServer | None = None  # the worker's parent: kills it when there is no pidfd
    token: str | None = None  # names the worker to its fork server
    workdir: str | None = None
    transports: list[Any] = field(default_factory=list)

    def kill(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        elif self.token is not None and self.server is not None and self.server.alive():
            # No pidfd (old kernel, pidfd_open failed, or no greeting yet). If the server is
            # gone, so is the worker (parent-death signal).
            with contextlib.suppress(OSError):
                self.server.kill(self.token)

    def release(self) -> None:
        self.kill()
        for transport in self.transports:
            with contextlib.suppress(Exception):
                transport.close()
        self.transports.clear()
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            _WORKDIRS.discard(self.workdir)
            self.workdir = None


def _last_resort(handle: _WorkerHandle) -> None:
    # Runs at garbage collection or interpreter exit when close() was never awaited. It may run
    # off the event loop's thread, so it only signals and removes files; it leaves transports.
    handle.transports.clear()
    handle.release()


class _WorkerGone(Exception):
    pass


class SandboxSession:
    """One persistent sandboxed REPL over one document."""

    isolation: str

    def __init__(
        self,
        document: str,
        config: SandboxConfig,
        llm: LLMCallback | None,
        allow_unsafe_exec: bool,
    ) -> None:
        self._document = document
        self.config = config
        self._llm = llm
        self._allow_unsafe_exec = allow_unsafe_exec
        self._lock = asyncio.Lock()
        self._closed = False
        self._alive = False
        self._lost: str | None = None
        self._handle = _WorkerHandle()
        self._finalizer = weakref.finalize(self, _last_resort, self._handle)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.WriteTransport | None = None
        self.isolation = "none"
        self.worker_info: dict[str, Any] = {}
        self.pid: int | None = None

    # -- lifecycle --------------------------------------------------------------------------

    @classmethod
    async def start(
        cls,
        document: str,
        *,
        config: SandboxConfig | None = None,
        llm: LLMCallback | None = None,
        _allow_unsafe_exec_for_tests: bool = False,
    ) -> SandboxSession:
        """Fork a worker holding `document` as `doc`; returns once it is ready."""
        if not isinstance(document, str):
            raise TypeError("document must be a str")
        session = cls(document, config or SandboxConfig(), llm, _allow_unsafe_exec_for_tests)
        try:
            await session._spawn()
        except BaseException:
            await session.close()
            raise
        return session

    async def __aenter__(self) -> SandboxSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Kill the worker and remove its directory. Safe to call any number of times."""
        self._closed = True
        pidfd = self._handle.pidfd
        waiter = None
        if pidfd is not None and self._alive:
            with contextlib.suppress(OSError):
                waiter = os.dup(pidfd)
        self._drop_worker(None)
        self._finalizer.detach()
        if waiter is not None:
            try:
                await _wait_exit(waiter, 2.0)
            finally:
                os.close(waiter)

    def _drop_worker(self, reason: str | None) -> None:
        """Synchronously kill the current worker (safe inside cancellation)."""
        self._alive = False
        self._reader = None
        self._writer = None
        self._handle.release()
        self._handle.pid = None
        self._handle.server = None
        self._handle.token = None
        if reason is not None and not self._closed:
            self._lost = reason

    async def _spawn(self) -> None:
        config = self.config
        netns = _wants_netns(config)
        server = _SERVERS.get(netns)
        if server is None or not server.alive():
            server = await asyncio.to_thread(_fork_server, netns)
        self.isolation = _network_isolation(config, server.caps)
        workdir = tempfile.mkdtemp(prefix="fathom-sandbox-")
        _WORKDIRS.add(workdir)
        self._handle.workdir = workdir
        os.chmod(workdir, 0o711)  # the worker may enter it but, not owning it, cannot write
        to_worker_r, to_worker_w = os.pipe()
        try:
            from_worker_r, from_worker_w = os.pipe()
        except BaseException:
            os.close(to_worker_r)
            os.close(to_worker_w)
            raise
        # The parent's ends as file objects (closing one twice is harmless); each is closed here
        # on any failure until a transport owns it.
        read_pipe: Any = os.fdopen(from_worker_r, "rb", 0)
        write_pipe: Any = os.fdopen(to_worker_w, "wb", 0)
        try:
            reader = await self._connect(server, netns, to_worker_r, from_worker_w, read_pipe)
            read_pipe = None
            await self._connect_writer(write_pipe)
            write_pipe = None
        except BaseException:
            for pipe in (read_pipe, write_pipe):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
            raise
        await self._handshake(reader)

    async def _connect(
        self,
        server: _ForkServer,
        netns: bool,
        to_worker_r: int,
        from_worker_w: int,
        read_pipe: Any,
    ) -> asyncio.StreamReader:
        """Hand the worker's pipe ends to the fork server, then watch the worker's output."""
        config = self.config
        spawn_config = {
            "workdir": self._handle.workdir,
            "memory_mb": config.memory_mb,
            "cpu_seconds": config.cpu_seconds,
            "max_open_files": config.max_open_files,
            "max_processes": config.max_processes,
            "max_output_chars": config.max_output_chars,
            "max_code_chars": config.max_code_chars,
            "max_llm_calls_per_run": config.max_llm_calls_per_run,
            "uid": config.uid,
            "uid_base": config.uid_base,
            "network": self.isolation,
            "filesystem_lock": config.filesystem_lock,
            "syscall_filter": config.syscall_filter,
            "allow_unsafe_exec_for_tests": self._allow_unsafe_exec,
            "token": f"{os.getpid()}-{next(_TOKENS)}",
        }
        self._handle.token = spawn_config["token"]
        try:
            try:
                server.spawn(spawn_config, [to_worker_r, from_worker_w])
            except OSError:
                server = await asyncio.to_thread(_fork_server, netns)  # it died: start again
                server.spawn(spawn_config, [to_worker_r, from_worker_w])
        finally:
            os.close(to_worker_r)
            os.close(from_worker_w)
        self._handle.server = server
        reader = asyncio.StreamReader(limit=protocol.MAX_WORKER_FRAME)
        read_transport, _ = await asyncio.get_running_loop().connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), read_pipe
        )
        self._handle.transports.append(read_transport)
        return reader

    async def _connect_writer(self, write_pipe: Any) -> None:
        write_transport, _ = await asyncio.get_running_loop().connect_write_pipe(
            asyncio.Protocol, write_pipe
        )
        self._handle.transports.append(write_transport)
        self._writer = write_transport

    async def _handshake(self, reader: asyncio.StreamReader) -> None:
        """Send the document and wait until the worker is confined and ready."""
        config = self.config
        write_transport = self._writer
        assert write_transport is not None
        header, payload = protocol.encode_doc(self._document)
        if len(payload) > _PIPE_DEFAULT:
            # Room for the whole document: one write here and one read in the worker, instead of
            # a wake-up on both sides per 64 KB. Pages are only used while data sits in the pipe.
            with contextlib.suppress(OSError):
                fcntl.fcntl(
                    write_transport.get_extra_info("pipe").fileno(),
                    _F_SETPIPE_SZ,
                    min(len(payload) + len(header), _PIPE_MAX),
                )
        self._reader = reader
        write_transport.write(header)
        write_transport.write(payload)
        del payload
        try:
            async with asyncio.timeout(config.start_timeout_s):
                hello = await self._recv()
                if hello.get("op") != "hello" or not isinstance(hello.get("pid"), int):
                    raise SandboxError("sandbox worker sent an unexpected greeting")
                self.pid = self._handle.pid = hello["pid"]
                with contextlib.suppress(OSError):
                    # Without one, kill() goes through the fork server instead.
                    self._handle.pidfd = os.pidfd_open(hello["pid"])
                ready = await self._recv()
        except TimeoutError:
            self._drop_worker(None)
            raise SandboxError(
                f"sandbox worker not ready after {config.start_timeout_s} s"
            ) from None
        except (_WorkerGone, asyncio.IncompleteReadError, ConnectionError):
            self._drop_worker(None)
            raise SandboxError("sandbox worker exited during start-up") from None
        if ready.get("op") != "ready":
            self._drop_worker(None)
            raise SandboxError(f"sandbox worker failed to start: {ready.get('error', ready)}")
        self.worker_info = dict(ready.get("applied") or {})
        self._alive = True

    # -- I/O --------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        if self._writer is None or self._writer.is_closing():
            raise _WorkerGone()
        self._writer.write(protocol.encode_json(message))

    async def _recv(self) -> dict[str, Any]:
        reader = self._reader
        if reader is None:
            raise _WorkerGone()
        header = await reader.readexactly(protocol.HEADER.size)
        size, kind = protocol.HEADER.unpack(header)
        if size > protocol.MAX_WORKER_FRAME or kind != protocol.KIND_JSON:
            raise _WorkerGone()
        payload = await reader.readexactly(size)
        try:
            message = json.loads(payload)
        except ValueError:
            raise _WorkerGone() from None
        if not isinstance(message, dict):
            raise _WorkerGone()
        return message

    async def _answer_llm(self, message: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The reply to one llm() request, and whether a model was really called for it.

        Only the time of a real call is kept off the call's budget; a refusal is answered at
        once and counts like any other work of the code.
        """
        prompt, text = message.get("prompt"), message.get("text")
        if not isinstance(prompt, str) or not isinstance(text, str):
            return _llm_refusal("llm() takes two str arguments"), False
        if self._llm is None:
            return _llm_refusal(
                "llm() is not available: no model is attached to this sandbox"
            ), False
        try:
            if self.config.llm_timeout_s is None:
                answer = await self._llm(prompt, text)
            else:
                async with asyncio.timeout(self.config.llm_timeout_s):
                    answer = await self._llm(prompt, text)
        except LLMRefused as exc:
            return _llm_refusal(str(exc)[:2000] or "llm() was refused"), False
        except TimeoutError:
            error = f"llm() took longer than {self.config.llm_timeout_s} s"
            return {"op": "llm_result", "ok": False, "error": error}, True
        except Exception as exc:
            # The text of an arbitrary error (a client's, with its URL) is not for the model.
            error = f"llm() failed: {type(exc).__name__}"
            return {"op": "llm_result", "ok": False, "error": error}, True
        if not isinstance(answer, str):
            return {
                "op": "llm_result",
                "ok": False,
                "error": "llm() callback returned no text",
            }, True
        return {"op": "llm_result", "ok": True, "text": answer}, True

    async def _exchange(self, request: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """Send one request; serve llm() calls until the result.

        The budget is wall-clock time since the request was sent, minus the time spent awaiting
        real model calls. Refused llm() calls are not deducted, so code that loops on them cannot
        hold the call (and this process's attention) open beyond the limit.
        """
        budget = self.config.call_timeout_s + self.config.kill_grace_s
        llm_wait = 0.0
        excluded = 0.0
        started = time.perf_counter()
        self._send(request)
        while True:
            remaining = budget - (time.perf_counter() - started - excluded)
            async with asyncio.timeout(max(remaining, 0.0)):
                message = await self._recv()
            if message.get("op") != "llm":
                return message, llm_wait
            mark = time.perf_counter()
            answer, real = await self._answer_llm(message)
            spent = time.perf_counter() - mark
            llm_wait += spent
            if real:
                excluded += spent
            self._send(answer)

    # -- public calls -----------------------------------------------------------------------

    async def run(self, code: str) -> ReplResult:
        """Run `code` in the REPL. Never raises for anything the code does."""
        if not isinstance(code, str):
            raise TypeError("code must be a str")
        return await self._run(code, "run")

    async def _run(self, code: str, op: str) -> ReplResult:
        async with self._lock:
            if self._closed:
                raise SandboxError("the sandbox session is closed")
            started = time.perf_counter()
            restarted = None
            if not self._alive:
                restarted = self._lost or "the previous sandbox worker stopped"
                self._lost = None
                await self._spawn()
            try:
                reply, llm_wait = await self._exchange(
                    {"op": op, "code": code, "timeout": self.config.call_timeout_s}
                )
            except TimeoutError:
                limit = self.config.call_timeout_s
                self._drop_worker(f"it was killed after exceeding the {limit:g} s time limit")
                return self._failure(
                    started,
                    f"TimeoutError: the call did not finish within {limit:g} s and the sandbox "
                    "was restarted; variables from earlier calls are lost (`doc` is still "
                    "available)",
                    timed_out=True,
                    restarted=restarted,
                )
            except (_WorkerGone, asyncio.IncompleteReadError, ConnectionError):
                self._drop_worker("it crashed")
                return self._failure(
                    started,
                    "SandboxCrash: the sandbox worker died during this call (memory, CPU limit "
                    "or a crash) and was restarted; variables from earlier calls are lost "
                    "(`doc` is still available)",
                    timed_out=False,
                    restarted=restarted,
                )
            except BaseException:
                # Cancelled (or worse) mid-call: the worker's state is unknown, so stop it.
                self._drop_worker("the previous call was cancelled")
                raise
            if reply.get("op") != "result":
                self._drop_worker("it answered out of protocol")
                return self._failure(
                    started, "SandboxCrash: protocol error", timed_out=False, restarted=restarted
                )
            return self._result(reply, started, llm_wait, restarted)

    async def read_variable(self, name: str) -> str:
        """The str value of REPL variable `name`; SandboxError if missing or not text."""
        async with self._lock:
            if self._closed:
                raise SandboxError("the sandbox session is closed")
            if not self._alive:
                raise SandboxError(
                    f"no REPL variable named {name!r}: the sandbox was restarted "
                    f"({self._lost or 'worker stopped'}) and earlier variables are lost"
                )
            try:
                reply, _ = await self._exchange({"op": "read", "name": name})
            except (TimeoutError, _WorkerGone, asyncio.IncompleteReadError, ConnectionError):
                self._drop_worker("it stopped answering")
                raise SandboxError("the sandbox worker stopped answering") from None
            except BaseException:
                self._drop_worker("the previous call was cancelled")
                raise
            if reply.get("op") != "value":
                raise SandboxError("unexpected reply from the sandbox worker")
            if not reply.get("ok"):
                raise SandboxError(str(reply.get("error", "variable unavailable")))
            value = reply.get("value")
            if not isinstance(value, str):
                raise SandboxError(f"{name!r} is not text")
            return value

    async def _unsafe_exec_for_tests(self, code: str) -> ReplResult:
        """Run plain `exec` (real builtins) inside the confined worker: tests of the OS layer.

        Only sessions started with `_allow_unsafe_exec_for_tests=True` accept it; sandboxed code
        has no way to send this request.
        """
        if not self._allow_unsafe_exec:
            raise SandboxError("this session was not started for unsafe test execution")
        return await self._run(code, "unsafe_exec")

    # -- results ----------------------------------------------------------------------------

    def _result(
        self, reply: dict[str, Any], started: float, llm_wait: float, restarted: str | None
    ) -> ReplResult:
        limit = self.config.max_output_chars
        output = reply.get("output")
        output = output if isinstance(output, str) else ""
        if len(output) > limit + 400:  # the worker already cut it; do not trust that
            output = output[:limit] + "\n[output truncated]"
        if restarted is not None:
            output = _restart_note(restarted) + output
        error = reply.get("error")
        error = str(error)[:4000] if error is not None else None
        return ReplResult(
            output=output,
            error=error,
            wall_s=time.perf_counter() - started,
            output_chars=_int(reply.get("output_chars")),
            truncated=bool(reply.get("truncated")),
            timed_out=bool(reply.get("timed_out")),
            touched_document=bool(reply.get("touched_document")),
            llm_calls=_int(reply.get("llm_calls")),
            llm_wait_s=llm_wait,
            worker_restarted=restarted is not None,
        )

    def _failure(
        self, started: float, error: str, *, timed_out: bool, restarted: str | None
    ) -> ReplResult:
        return ReplResult(
            output=_restart_note(restarted) if restarted is not None else "",
            error=error,
            wall_s=time.perf_counter() - started,
            output_chars=0,
            truncated=False,
            timed_out=timed_out,
            touched_document=False,
            llm_calls=0,
            worker_restarted=restarted is not None,
        )


def _llm_refusal(error: str) -> dict[str, Any]:
    # "refused" tells the worker to charge the wait to the call, as the parent does.
    return {"op": "llm_result", "ok": False, "error": error, "refused": True}


def _restart_note(reason: str) -> str:
    return (
        f"[sandbox restarted: the previous worker stopped because {reason}; variables from "
        "earlier calls are gone, `doc` is loaded again]\n"
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


async def _wait_exit(pidfd: int, timeout: float) -> None:
    """Wait until the process behind `pidfd` has exited (a pidfd turns readable then)."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.add_reader(pidfd, lambda: done.done() or done.set_result(None))
    try:
        async with asyncio.timeout(timeout):
            await done
    except TimeoutError:
        pass
    finally:
        loop.remove_reader(pidfd)
