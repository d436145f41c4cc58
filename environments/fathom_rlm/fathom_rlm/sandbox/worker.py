"""Code that runs outside the parent: the warm fork server and the per-session worker.

The fork server is started once per parent process as ``python -I -S`` with an empty
environment. It imports everything a worker needs, optionally enters a fresh network
namespace, then waits on a unix socket for requests; each request carries the two pipe ends of
a new session and a small JSON config. It forks; the child confines itself (rlimits, uid,
no_new_privs, Landlock, seccomp) and becomes the worker: it receives the document once and
answers run/read requests over its pipes until the parent closes them.

Only the standard library and RestrictedPython are imported here.
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import io
import json
import os
import resource
import signal
import socket
import sys
import time
from typing import Any

from . import isolation, protocol, restricted

_STDIN, _STDOUT, _STDERR = 0, 1, 2
_NULL_TEXT: Any = None


class Channel:
    """Blocking frame I/O over the worker's two pipe ends."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        # Lives as long as the worker; closing it would close the pipe.
        self._reader = open(read_fd, "rb", buffering=1 << 16, closefd=False)  # noqa: SIM115
        self._write_fd = write_fd

    def send(self, message: dict[str, Any]) -> None:
        self.write(protocol.encode_json(message))

    def write(self, frame: bytes) -> None:
        data = memoryview(frame)
        while data:
            data = data[os.write(self._write_fd, data) :]

    def recv_frame(self) -> tuple[int, bytes] | None:
        header = self._reader.read(protocol.HEADER.size)
        if len(header) < protocol.HEADER.size:
            return None
        size, kind = protocol.HEADER.unpack(header)
        payload = self._reader.read(size)
        if len(payload) < size:
            return None
        return kind, payload

    def recv(self) -> dict[str, Any] | None:
        frame = self.recv_frame()
        if frame is None:
            return None
        return json.loads(frame[1])


class _Clock:
    """Per-call wall-clock budget enforced with SIGALRM inside the worker.

    The alarm raises SandboxTimeout only while sandboxed code runs; it repeats every 0.1 s so
    code that swallows it with a bare except is interrupted again. The parent kills the worker
    if the call still has not returned after a grace period.
    """

    def __init__(self) -> None:
        self.active = False
        self.limit = 0.0
        signal.signal(signal.SIGALRM, self._on_alarm)

    def _on_alarm(self, signum: int, frame: Any) -> None:
        if self.active:
            raise restricted.SandboxTimeout(
                f"TimeoutError: the call exceeded its {self.limit:g} s time limit and was "
                "interrupted; variables assigned before that point are kept"
            )

    def start(self, seconds: float) -> None:
        self.limit = seconds
        signal.setitimer(signal.ITIMER_REAL, seconds, 0.1)

    def pause(self) -> float:
        remaining, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        return remaining

    def resume(self, remaining: float) -> None:
        signal.setitimer(signal.ITIMER_REAL, max(remaining, 0.001), 0.1)

    def stop(self) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)


class Worker:
    def __init__(self, channel: Channel, config: dict[str, Any], document: str) -> None:
        self.channel = channel
        self.config = config
        self.clock = _Clock()
        self.buffer = restricted.OutputBuffer(int(config["max_output_chars"]))
        self.llm_calls = 0
        self.llm_wait = 0.0
        self.max_llm_calls = int(config.get("max_llm_calls_per_run", 32))
        self.globals = restricted.make_globals(document, self.buffer, self._llm)

    def _llm(self, prompt: Any, text: Any = "") -> str:
        """llm(prompt, text): a request to the parent over the pipe, answered with a str."""
        if not isinstance(prompt, str) or not isinstance(text, str):
            raise TypeError("llm(prompt, text) takes two str arguments")
        if self.llm_calls >= self.max_llm_calls:
            # Refused here, without a message: a loop of failing calls then costs the parent
            # nothing more and runs into the call's clock like any other loop.
            raise restricted.LLMError(
                f"llm() was called more than {self.max_llm_calls} times in this call; this "
                "one was not sent"
            )
        self.llm_calls += 1
        frame = protocol.encode_json({"op": "llm", "prompt": prompt, "text": text})
        # Encoding is charged; the alarm may not interrupt a half-written frame, so it is held
        # (the timer keeps running) until the write is done.
        active, self.clock.active = self.clock.active, False
        try:
            self.channel.write(frame)
        finally:
            self.clock.active = active
        del frame
        remaining = self.clock.pause()  # only the wait for the parent's answer is excluded
        started = time.perf_counter()
        reply = None
        try:
            reply = self.channel.recv()
        finally:
            waited = time.perf_counter() - started
            self.llm_wait += waited
            if isinstance(reply, dict) and reply.get("refused"):
                remaining -= waited  # the parent refused at once and charges it too
            self.clock.resume(remaining)
        if reply is None:
            os._exit(0)  # the parent is gone
        if reply.get("op") != "llm_result":
            os._exit(3)  # protocol violation: nothing sensible left to do
        if not reply.get("ok"):
            raise restricted.LLMError(str(reply.get("error") or "llm() failed"))
        return str(reply.get("text", ""))

    def run(self, code: str, timeout: float) -> dict[str, Any]:
        self.buffer.reset(int(self.config["max_output_chars"]))
        self.llm_calls = 0
        self.llm_wait = 0.0
        started = time.perf_counter()
        error = None
        timed_out = False
        touched = False
        if len(code) > int(self.config["max_code_chars"]):
            error = f"CodeTooLong: {len(code)} chars, limit {self.config['max_code_chars']}"
        else:
            try:
                compiled = restricted.compile_cell(code)
            except restricted.RejectedCode as exc:
                error = str(exc)
            else:
                touched = compiled.touches_document
                error, timed_out = self._execute(compiled, timeout)
        exec_s = time.perf_counter() - started - self.llm_wait
        return self._result(error, timed_out, touched, exec_s)

    def _result(
        self, error: str | None, timed_out: bool, touched: bool, exec_s: float
    ) -> dict[str, Any]:
        """The reply to one call: the rendered output and what the call did."""
        output, chars, truncated = self.buffer.render()
        return {
            "op": "result",
            "output": output,
            "error": error,
            "output_chars": chars,
            "truncated": truncated,
            "timed_out": timed_out,
            "touched_document": touched,
            "llm_calls": self.llm_calls,
            "llm_wait_s": self.llm_wait,
            "exec_s": exec_s,
        }

    def _execute(self, compiled: restricted.Compiled, timeout: float) -> tuple[str | None, bool]:
        g = self.globals
        try:
            self.clock.start(timeout)
            try:
                self.clock.active = True
                exec(compiled.body, g)
                if compiled.tail is not None:
                    value = eval(compiled.tail, g)
                    if value is not None:
                        self.buffer.write(repr(value) + "\n")
            finally:
                self.clock.active = False
                self.clock.stop()
        except restricted.SandboxTimeout as exc:
            return str(exc), True
        except MemoryError:
            return (f"MemoryError: the {self.config['memory_mb']} MB memory limit was hit"), False
        except BaseException as exc:
            return restricted.describe_exception(exc), False
        return None, False

    def read_variable(self, name: Any) -> dict[str, Any]:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            return {"op": "value", "ok": False, "error": f"{name!r} is not a variable name"}
        if name not in self.globals:
            return {"op": "value", "ok": False, "error": f"no REPL variable named {name!r}"}
        value = self.globals[name]
        if not isinstance(value, str):
            kind = type(value).__name__
            return {"op": "value", "ok": False, "error": f"{name!r} is a {kind}, not text (str)"}
        return {"op": "value", "ok": True, "value": value}

    def unsafe_exec(self, code: str, timeout: float) -> dict[str, Any]:
        """Plain exec with real builtins, still inside every OS limit. Tests only."""
        self.buffer.reset(int(self.config["max_output_chars"]))
        self.llm_calls = 0  # plain exec has no llm()
        self.llm_wait = 0.0
        sink = io.StringIO()
        error = None
        timed_out = False
        try:
            self.clock.start(timeout)
            try:
                self.clock.active = True
                with contextlib.redirect_stdout(sink):
                    exec(code, {"__builtins__": builtins, "doc": self.globals.get("doc")})
            finally:
                self.clock.active = False
                self.clock.stop()
        except restricted.SandboxTimeout as exc:
            error, timed_out = str(exc), True
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
        self.buffer.write(sink.getvalue())
        return self._result(error, timed_out, touched=False, exec_s=0.0)

    def serve(self) -> None:
        while True:
            message = self.channel.recv()
            if message is None or message.get("op") == "exit":
                return
            op = message.get("op")
            if op == "run":
                reply = self.run(str(message.get("code", "")), float(message["timeout"]))
            elif op == "read":
                reply = self.read_variable(message.get("name"))
            elif op == "unsafe_exec" and self.config.get("allow_unsafe_exec_for_tests"):
                reply = self.unsafe_exec(str(message.get("code", "")), float(message["timeout"]))
            else:
                reply = {"op": "error", "error": f"unknown request {op!r}"}
            self.channel.send(reply)


# ---------------------------------------------------------------------------------------------
# Worker start-up (runs in the forked child, as root until drop_privileges)
# ---------------------------------------------------------------------------------------------


def _confine(config: dict[str, Any], zygote_pid: int, caps: dict[str, Any]) -> dict[str, Any]:
    """Apply every OS restriction, in an order where each step still has the rights it needs."""
    applied: dict[str, Any] = {}
    os.chdir(config["workdir"])
    os.environ.clear()
    isolation.apply_rlimits(
        memory_mb=int(config["memory_mb"]),
        cpu_seconds=int(config["cpu_seconds"]),
        open_files=int(config["max_open_files"]),
        processes=int(config["max_processes"]),
    )
    applied["rlimits"] = True
    uid = None
    if os.geteuid() == 0:
        wanted = config.get("uid")
        candidates = [int(wanted)] if wanted is not None else []
        candidates += [int(config["uid_base"]) + os.getpid(), 65534]
        for candidate in candidates:
            try:
                isolation.drop_privileges(candidate, candidate)
            except OSError:
                continue
            uid = candidate
            break
        if uid is None:
            raise OSError("could not switch to an unprivileged uid")
    applied["uid"] = os.getuid()
    applied["uid_switched"] = uid is not None
    isolation.set_no_new_privs()
    isolation.set_not_dumpable()
    isolation.set_parent_death_signal(zygote_pid)
    applied["landlock"] = False
    if config.get("filesystem_lock", True) and caps.get("landlock_abi", 0) > 0:
        isolation.apply_landlock(int(caps["landlock_abi"]))
        applied["landlock"] = True
    applied["seccomp"] = False
    if config.get("syscall_filter", True) and caps.get("seccomp"):
        isolation.apply_seccomp(block_network=config.get("network") != "none")
        applied["seccomp"] = True
    return applied


def worker_main(
    read_fd: int, write_fd: int, config: dict[str, Any], zygote_pid: int, caps: dict
) -> None:
    os.setsid()  # out of the parent's process group and terminal
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write over RLIMIT_FSIZE fails with EFBIG
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(read_fd, _STDIN)
    os.dup2(write_fd, _STDOUT)
    os.dup2(null, _STDERR)
    os.closerange(3, 1 << 20)  # close_fds: the fork server's socket and anything else
    sys.stdout = sys.stderr = _NULL_TEXT  # fd 2 is /dev/null from here on
    channel = Channel(_STDIN, _STDOUT)
    channel.send({"op": "hello", "pid": os.getpid()})
    try:
        applied = _confine(config, zygote_pid, caps)
    except Exception as exc:
        channel.send({"op": "failed", "error": f"{type(exc).__name__}: {exc}"})
        return
    frame = channel.recv_frame()
    if frame is None or frame[0] != protocol.KIND_DOC:
        return
    document = frame[1].decode("utf-8", "surrogatepass")
    del frame
    worker = Worker(channel, config, document)
    channel.send({"op": "ready", "applied": applied})
    worker.serve()


# ---------------------------------------------------------------------------------------------
# Fork server
# ---------------------------------------------------------------------------------------------


# Workers cannot open files (Landlock), so every module a helper or a str method might import
# lazily has to be in memory before the fork.
_PRELOAD = (
    "heapq",
    "encodings.latin_1",
    "encodings.utf_16",
    "encodings.utf_32",
    "encodings.ascii",
    "encodings.cp1252",
    "encodings.idna",
    "encodings.unicode_escape",
    "unicodedata",
    "_thread",
)
_WARM_CELL = """
x = re_findall(r'\\w+', doc, 'imsx')
y = re_sub(r'(w)', r'<\\1>', doc) + re_escape('.') + to_json({'a': [1]}, indent=1)
z = re_split(r'a', doc, 1) + re_finditer('a', doc) + most_common(doc, 1) + [counter(doc)]
z += re_finditer(r'\\bawa\\b', doc)
w = '{0:>5}{a:,}'.format(1, a=2) + str(from_json('[1]')) + f'{3.5:.1f}'
print(len(x), y, z, w, sorted(map(str.lower, filter(None, x))))
try:
    {}['k']
except KeyError as e:
    q = e
x
"""


def _warm_up() -> None:
    """Exercise the code paths a worker uses so forked children share the warmed pages."""
    import importlib

    for name in _PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    buffer = restricted.OutputBuffer(100)
    g = restricted.make_globals("warm awa", buffer, lambda p, t="": "")
    compiled = restricted.compile_cell(_WARM_CELL)
    exec(compiled.body, g)
    eval(compiled.tail, g)
    restricted.describe_exception(KeyError("k"))
    isolation.libc()


# Live workers by the token the parent gave at spawn. SIGCHLD is blocked while this is read or
# filled, so a pid found here is an unreaped child: it cannot belong to another process.
_LIVE: dict[str, int] = {}


def _reap() -> None:
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        # A SIGCHLD can arrive while this handler runs and reap re-entrantly: snapshot the dict
        # in one C call (no bytecode boundary inside) and tolerate tokens already removed.
        for token in [t for t, p in list(_LIVE.items()) if p == pid]:
            _LIVE.pop(token, None)


def _kill_worker(token: Any) -> None:
    """SIGKILL the worker spawned with `token`, for a parent that has no pidfd for it."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    try:
        pid = _LIVE.get(token) if isinstance(token, str) else None
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _cpu_stats() -> dict[str, float]:
    """CPU seconds of this fork server and of every worker it has reaped (benchmarks)."""
    _reap()
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"self": own.ru_utime + own.ru_stime, "children": kids.ru_utime + kids.ru_stime}


def zygote_main(control_fd: int, want_netns: bool) -> None:
    sock = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    netns = isolation.unshare_network() if want_netns else False
    caps = isolation.probe()
    # Workers are reaped here rather than by the kernel (SIG_IGN) so their CPU time, exit
    # included, adds up in RUSAGE_CHILDREN, which the parent can ask for.
    signal.signal(signal.SIGCHLD, lambda signum, frame: _reap())
    caps["netns"] = netns
    caps["pid"] = os.getpid()
    caps["python"] = sys.version.split()[0]
    global _NULL_TEXT
    # Built once here rather than in every worker (it costs an encoding lookup and new objects
    # per start); it writes to whatever fd 2 is, which each worker points at /dev/null.
    _NULL_TEXT = io.TextIOWrapper(io.FileIO(_STDERR, "w", closefd=False), encoding="utf-8")
    _warm_up()
    gc.collect()
    gc.freeze()  # keep the warmed heap out of collections so forked pages stay shared
    sock.send(json.dumps(caps).encode())
    my_pid = os.getpid()
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 4)
        except OSError:
            break
        if not message:
            break  # the parent closed its end (it exited): stop; workers die by pdeathsig
        if not fds and message == b'{"op":"stats"}':
            sock.send(json.dumps(_cpu_stats()).encode())
            continue
        if not fds:
            with contextlib.suppress(ValueError):
                request = json.loads(message)
                if isinstance(request, dict) and request.get("op") == "kill":
                    _kill_worker(request.get("token"))
            continue
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            continue
        old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
        try:
            config = json.loads(message)
            pid = os.fork()
        except Exception:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
            for fd in fds:
                os.close(fd)
            continue
        if pid == 0:
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
            code = 0
            try:
                worker_main(fds[0], fds[1], config, my_pid, caps)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        token = config.get("token") if isinstance(config, dict) else None
        if isinstance(token, str):
            _LIVE[token] = pid
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        for fd in fds:
            os.close(fd)
    os._exit(0)
