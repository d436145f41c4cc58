"""The per-session worker: runs model code for one rollout, inside every OS restriction.

A worker is forked by the fork server (forkserver.py), confines itself (rlimits, uid,
no_new_privs, Landlock, seccomp), receives the document once and answers run/read requests over
its pipes until the parent closes them. Whatever the model's code does, the worker answers with
a result: it only dies for a resource limit (memory, CPU, the parent's wall clock).

Only the standard library and RestrictedPython are imported here.
"""

from __future__ import annotations

import builtins
import contextlib
import gc
import io
import json
import os
import signal
import sys
import time
from typing import Any

from . import cells, isolation, protocol, restricted

STDIN, STDOUT, STDERR = 0, 1, 2
NULL_TEXT: Any = None  # set by the fork server before any fork
_ERROR_CHARS = 4000  # an error text longer than this is cut (the parent cuts it again)


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
            raise restricted.SandboxTimeout(self.message())

    def message(self) -> str:
        return (
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
        self.max_llm_chars = int(config.get("max_llm_request_chars", 1_000_000))
        self.max_batch_chars = int(config.get("max_llm_batch_chars", 1_000_000))
        self.max_frame = protocol.frame_cap(max(self.max_llm_chars, self.max_batch_chars))
        self.globals = restricted.make_globals(document, self.buffer, self._llm, self._llm_batch)
        # The cyclic collector runs the model's finalizers (a generator's `finally`) wherever
        # it happens to trigger; it runs only while the call's clock does, so such code can
        # never spin outside it (in the protocol loop, or while an llm() answer is awaited).
        gc.disable()
        sys.unraisablehook = self._on_unraisable

    def _on_unraisable(self, unraisable: Any) -> None:
        """A finalizer of the model's swallowed the call's timeout (Python cannot raise it on).

        Fire again at once instead of in 0.1 s: otherwise each pending finalizer that spins
        (a generator's `finally` run by the collector) would hold the call 0.1 s longer.
        """
        if self.clock.active and isinstance(unraisable.exc_value, restricted.SandboxTimeout):
            signal.setitimer(signal.ITIMER_REAL, 0.0001, 0.1)

    def _llm(self, prompt: Any, text: Any = "") -> str:
        """llm(prompt, text): a request to the parent over the pipe, answered with a str."""
        if not isinstance(prompt, str) or not isinstance(text, str):
            raise TypeError("llm(prompt, text) takes two str arguments")
        refusal = self._refusal(prompt, text, self.llm_calls)
        if refusal is not None:
            raise restricted.LLMError(refusal)
        request = {"op": "llm", "prompt": prompt, "text": text}
        reply = self._ask(request, 1, "llm_result", "llm() request")
        if not reply.get("ok"):
            raise restricted.LLMError(str(reply.get("error") or "llm() failed"))
        return str(reply.get("text", ""))

    def _refusal(self, prompt: str, text: str, calls: int) -> str | None:
        """Why an llm() request is not sent when `calls` were sent before it, or None. Refused
        here, without a message: a loop of failing calls then costs the parent nothing more
        and runs into the call's clock like any other loop; and a prompt of tens of MB is
        refused before it is encoded."""
        if calls >= self.max_llm_calls:
            return (
                f"llm() was called more than {self.max_llm_calls} times in this call; this "
                "one was not sent"
            )
        size = len(prompt) + len(text)
        if size > self.max_llm_chars:
            return (
                f"llm() prompt and text have {size:,} characters together; the limit is "
                f"{self.max_llm_chars:,}. Pass a smaller slice"
            )
        return None

    def _llm_batch(self, requests: Any) -> list[str]:
        """llm_batch([(prompt, text), ...]): the answers in order, asked of the parent at once.

        An entry over a cap, or one the parent refuses or fails, gets "Error: <why>" in its
        place; the batch itself goes on. Entries past the call's llm() budget are not sent.
        """
        usage = "llm_batch() takes a list of (prompt, text) pairs of str"
        if not isinstance(requests, (list, tuple)):
            raise TypeError(usage)
        pairs = [tuple(r) if isinstance(r, (list, tuple)) else () for r in requests]
        if any(len(p) != 2 or not all(isinstance(x, str) for x in p) for p in pairs):
            raise TypeError(usage)
        answers: list[str | None] = [None] * len(pairs)
        sent: list[int] = []
        chars = 0
        for i, (prompt, text) in enumerate(pairs):
            size = len(prompt) + len(text)
            refusal = self._refusal(prompt, text, self.llm_calls + len(sent))
            if refusal is not None:
                answers[i] = f"Error: {refusal}"
            elif chars + size > self.max_batch_chars:
                answers[i] = (
                    f"Error: the batch is over {self.max_batch_chars:,} characters; this one "
                    "was not sent"
                )
            else:
                chars += size
                sent.append(i)
        if sent:
            request = {"op": "llm_batch", "requests": [list(pairs[i]) for i in sent]}
            reply = self._ask(request, len(sent), "llm_batch_result", "llm_batch() request")
            results = reply.get("results")
            if not isinstance(results, list) or len(results) != len(sent):
                os._exit(protocol.EXIT_PROTOCOL)
            for i, result in zip(sent, results, strict=True):
                ok = isinstance(result, dict) and result.get("ok")
                error = result.get("error") if isinstance(result, dict) else None
                answers[i] = str(result.get("text", "")) if ok else f"Error: {error or 'failed'}"
        return [a or "" for a in answers]

    def _ask(self, request: dict[str, Any], calls: int, expected: str, what: str) -> dict:
        """Send `request` (`calls` llm() calls) and wait for the parent's reply of kind `expected`.

        Encoding is charged; the alarm may not interrupt a half-written frame nor the wait for
        the answer, so it is held (the timer keeps running until the wait) until the answer is
        in: a timeout raised between the two would leave the answer unread in the pipe.
        """
        frame = protocol.encode_json(request)
        del request
        if len(frame) > self.max_frame:
            raise restricted.LLMError(f"{what} too large once encoded; pass less text")
        self.llm_calls += calls
        active = self.clock.active
        gc.disable()  # first: the collector runs only while the clock may interrupt it
        self.clock.active = False
        try:
            self.channel.write(frame)
            del frame
            return self._llm_reply(expected)
        finally:
            self.clock.active = active
            if active:
                gc.enable()

    def _llm_reply(self, expected: str) -> dict[str, Any]:
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
        if not isinstance(reply, dict) or reply.get("op") != expected:
            os._exit(protocol.EXIT_PROTOCOL)  # nothing sensible left to do
        return reply

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
                compiled = cells.compile_cell(code)
            except cells.RejectedCode as exc:
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
        if error is not None and len(error) > _ERROR_CHARS:
            error = error[:_ERROR_CHARS] + " [...]"
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

    def _execute(self, compiled: cells.Compiled, timeout: float) -> tuple[str | None, bool]:
        self.clock.start(timeout)
        error, timed_out = None, False
        try:
            error = self._execute_clocked(compiled)
        except restricted.SandboxTimeout:
            timed_out = True  # no call here: a further alarm cannot fire before the loop below
        # Until the clock is off, alarms keep firing (at once after a finalizer swallowed one);
        # each is caught here, never raised out of the call. The collector stops first: it runs
        # model finalizers, which must never run unclocked.
        while True:
            try:
                gc.disable()
                self.clock.active = False
                break
            except restricted.SandboxTimeout:
                continue  # the cell's outcome is already known
        self.clock.stop()
        if timed_out:
            error = self.clock.message()
        return error, timed_out

    def _execute_clocked(self, compiled: cells.Compiled) -> str | None:
        """Run the cell; describe what it raised while the clock still runs.

        Describing an exception calls code the model wrote (a str subclass as message, an
        attribute of an unexpected type), so it gets the same clock and the same catch-all.
        """
        g = self.globals
        self.clock.active = True
        gc.enable()
        try:
            exec(compiled.body, g)
            if compiled.tail is not None:
                value = eval(compiled.tail, g)
                if value is not None:
                    self.buffer.write(str(repr(value)) + "\n")
        except restricted.SandboxTimeout:
            raise
        except MemoryError:
            return f"MemoryError: the {self.config['memory_mb']} MB memory limit was hit"
        except BaseException as exc:
            return cells.describe_exception(exc)
        return None

    def read_variable(self, name: Any, max_chars: Any) -> dict[str, Any]:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            return {"op": "value", "ok": False, "error": f"{name!r} is not a variable name"}
        if name not in self.globals:
            return {"op": "value", "ok": False, "error": f"no REPL variable named {name!r}"}
        value = self.globals[name]
        if not isinstance(value, str):
            kind = type(value).__name__
            return {"op": "value", "ok": False, "error": f"{name!r} is a {kind}, not text (str)"}
        if isinstance(max_chars, int) and len(value) > max_chars:
            error = f"{name!r} has {len(value):,} characters; the limit is {max_chars:,}"
            return {"op": "value", "ok": False, "error": error}
        return {"op": "value", "ok": True, "value": str(value)}

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

    def _reply_to(self, message: dict[str, Any]) -> dict[str, Any]:
        op = message.get("op")
        if op == "run":
            return self.run(str(message.get("code", "")), float(message["timeout"]))
        if op == "read":
            return self.read_variable(message.get("name"), message.get("max_chars"))
        if op == "unsafe_exec" and self.config.get("allow_unsafe_exec_for_tests"):
            return self.unsafe_exec(str(message.get("code", "")), float(message["timeout"]))
        return {"op": "error", "error": f"unknown request {op!r}"}

    def _fallback(self, message: dict[str, Any], exc: BaseException) -> dict[str, Any]:
        """A reply for a request whose handling failed outside the model's code."""
        if isinstance(exc, MemoryError):
            error = f"MemoryError: the {self.config['memory_mb']} MB memory limit was hit"
        else:
            error = f"SandboxError: the call could not be completed ({type(exc).__name__})"
        if message.get("op") == "read":
            return {"op": "value", "ok": False, "error": error}
        self.buffer.reset(int(self.config["max_output_chars"]))
        return self._result(error, False, False, 0.0)

    def serve(self) -> None:
        """Answer requests until the parent closes the pipe. Nothing here may end the worker.

        Anything raised while a request is handled or its reply is encoded (out of memory, a
        value that cannot be shown) becomes an error reply; REPL state is kept.
        """
        while True:
            message = self.channel.recv()
            if message is None or message.get("op") == "exit":
                return
            try:
                frame = protocol.encode_json(self._reply_to(message))
            except BaseException as exc:
                try:
                    frame = protocol.encode_json(self._fallback(message, exc))
                except MemoryError:
                    os._exit(protocol.EXIT_OUT_OF_MEMORY)
            self.channel.write(frame)
            del frame


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
    os.dup2(read_fd, STDIN)
    os.dup2(write_fd, STDOUT)
    os.dup2(null, STDERR)
    os.closerange(3, 1 << 20)  # close_fds: the fork server's socket and anything else
    sys.stdout = sys.stderr = NULL_TEXT  # fd 2 is /dev/null from here on
    channel = Channel(STDIN, STDOUT)
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
