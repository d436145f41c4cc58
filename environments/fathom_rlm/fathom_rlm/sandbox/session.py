"""Parent side: the async session API one rollout uses.

A session is one worker process (forked from a warm fork server, see launcher.py) that holds
the document as `doc` and keeps REPL state between calls. Talking to it costs one pipe round
trip per call. The worker runs model code, so the session treats it as compromised: every cap
is enforced here too, and anything it sends out of protocol stops it with an error result.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import re
import tempfile
import time
import weakref
from typing import Any

from . import protocol, replies
from .config import (
    LLMCallback,
    ReplResult,
    SandboxConfig,
    call_llm,
    network_isolation,
    refuse_llm,
    wants_netns,
)
from .launcher import SERVERS, ForkServer, SandboxError, died_within, fork_server
from .worker_handle import (
    READ_ERRORS,
    WORKDIRS,
    ServerDied,
    WorkerGone,
    WorkerHandle,
    last_resort,
    send_document,
    wait_exit,
    worker_exit_status,
)

# ---------------------------------------------------------------------------------------------
# Sessions
# ---------------------------------------------------------------------------------------------

# Where working directories are created (None: the system's temporary directory). Tests point
# it at a root of their own so they only ever inspect their own directories.
WORKDIR_ROOT: str | None = None
_TOKENS = itertools.count(1)


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
        self._handle = WorkerHandle()
        self._finalizer = weakref.finalize(self, last_resort, self._handle)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.WriteTransport | None = None
        self._llm_calls_total = 0
        self._batches: list[int] = []  # the entries of each llm_batch() of the current call
        # Largest frame accepted for each kind of message, from this session's caps.
        self._result_cap = protocol.frame_cap(config.max_output_chars + 10_000)
        self._llm_cap = protocol.frame_cap(
            max(config.max_llm_request_chars, config.max_llm_batch_chars)
        )
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
                await wait_exit(waiter, 2.0)
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
        self.pid = None
        if reason is not None and not self._closed:
            self._lost = reason

    async def _spawn(self) -> None:
        """Start a worker; if the fork server dies meanwhile, once more on a fresh one."""
        netns = wants_netns(self.config)
        for attempt in range(2):
            server = SERVERS.get(netns)
            if server is None or not server.alive():
                # Starting a fork server blocks for ~0.1-0.2 s: never on the event loop.
                server = await asyncio.to_thread(fork_server, netns)
            try:
                await self._spawn_on(server)
                return
            except ServerDied:
                self._drop_worker(None)
                if attempt:
                    raise SandboxError(
                        "the sandbox fork server died twice while starting a worker"
                    ) from None

    async def _spawn_on(self, server: ForkServer) -> None:
        self.isolation = network_isolation(self.config, server.caps)
        workdir = tempfile.mkdtemp(prefix="fathom-sandbox-", dir=WORKDIR_ROOT)
        WORKDIRS.add(workdir)
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
            reader = await self._connect(server, to_worker_r, from_worker_w, read_pipe)
            read_pipe = None
            await self._connect_writer(write_pipe)
            write_pipe = None
        except BaseException:
            for pipe in (read_pipe, write_pipe):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
            raise
        await self._handshake(reader, server)

    async def _connect(
        self, server: ForkServer, to_worker_r: int, from_worker_w: int, read_pipe: Any
    ) -> asyncio.StreamReader:
        """Hand the worker's pipe ends to the fork server, then watch the worker's output."""
        spawn_config = self.config.worker_settings(
            workdir=self._handle.workdir,
            network=self.isolation,
            allow_unsafe_exec=self._allow_unsafe_exec,
            token=f"{os.getpid()}-{next(_TOKENS)}",
        )
        self._handle.token = spawn_config["token"]
        try:
            server.spawn(spawn_config, [to_worker_r, from_worker_w])
        except OSError:
            raise ServerDied() from None
        finally:
            os.close(to_worker_r)
            os.close(from_worker_w)
        self._handle.server = server
        cap = max(self._result_cap, self._llm_cap, protocol.frame_cap(self.config.max_read_chars))
        reader = asyncio.StreamReader(limit=cap)
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

    async def _handshake(self, reader: asyncio.StreamReader, server: ForkServer) -> None:
        """Send the document and wait until the worker is confined and ready."""
        config = self.config
        self._reader = reader
        assert self._writer is not None
        send_document(self._writer, self._document)
        greeted = False
        try:
            async with asyncio.timeout(config.start_timeout_s):
                hello = await self._recv(protocol.FRAME_OVERHEAD)
                if hello.get("op") != "hello" or not isinstance(hello.get("pid"), int):
                    raise replies.ProtocolViolation("an unexpected greeting")
                greeted = True
                self.pid = self._handle.pid = hello["pid"]
                with contextlib.suppress(OSError):
                    # Without one, kill() goes through the fork server instead.
                    self._handle.pidfd = os.pidfd_open(hello["pid"])
                ready = await self._recv(protocol.FRAME_OVERHEAD)
        except TimeoutError:
            self._drop_worker(None)
            raise SandboxError(
                f"sandbox worker not ready after {config.start_timeout_s} s"
            ) from None
        except READ_ERRORS:
            self._drop_worker(None)
            # No greeting and the server gone: the request died with it; try a fresh one.
            if not greeted and await asyncio.to_thread(died_within, server, 1.0):
                raise ServerDied() from None
            raise SandboxError("sandbox worker exited during start-up") from None
        if ready.get("op") != "ready":
            self._drop_worker(None)
            raise SandboxError(f"sandbox worker failed to start: {ready.get('error', ready)}")
        applied = ready.get("applied")
        self.worker_info = dict(applied) if isinstance(applied, dict) else {}
        self._alive = True

    # -- I/O --------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        if self._writer is None or self._writer.is_closing():
            raise WorkerGone()
        self._writer.write(protocol.encode_json(message))

    async def _recv(self, cap: int) -> dict[str, Any]:
        """The next message from the worker; ProtocolViolation for anything malformed."""
        reader = self._reader
        if reader is None:
            raise WorkerGone()
        header = await reader.readexactly(protocol.HEADER.size)
        size, kind = protocol.HEADER.unpack(header)
        if kind != protocol.KIND_JSON:
            raise replies.ProtocolViolation(f"a message of unknown kind {kind}")
        if size > cap:
            raise replies.ProtocolViolation(f"a {size:,}-byte message; the limit is {cap:,}")
        payload = await reader.readexactly(size)
        # Decoded here: json.loads holds the GIL, so a thread would stall the loop just as long
        # (measured: longer). The caps keep a frame small enough (see docs/sandbox.md).
        return replies.decode_frame(payload)

    async def _reply_llm(self, message: dict[str, Any], in_run: int) -> dict[str, Any]:
        """The reply to one llm() request, the run's `in_run`th: a refusal by the caps, or the
        callback's answer."""
        refusal = refuse_llm(
            self.config, message, in_run, self._llm_calls_total, self._llm is not None
        )
        if refusal is not None:
            return replies.llm_refusal(refusal)
        return await self._answer_llm(message)

    async def _answer_llm(self, message: dict[str, Any]) -> dict[str, Any]:
        """The reply to one llm() request that passed the caps: the callback's answer."""
        assert self._llm is not None
        self._llm_calls_total += 1
        return await call_llm(self._llm, message["prompt"], message["text"], self.config)

    async def _answer_batch(self, entries: list[Any], in_run: int) -> dict[str, Any]:
        """The replies to an llm_batch() request, in order, at most `max_llm_parallel` at once.

        Each entry passes the same caps as one llm() request, counted in order (`in_run` is the
        run's count before the batch), so no interleaving of a batch lets more through.
        """
        gate = asyncio.Semaphore(max(1, self.config.max_llm_parallel))
        room = self.config.max_llm_batch_chars
        messages: list[dict[str, Any] | str] = []
        for entry in entries:
            if not (isinstance(entry, list) and len(entry) == 2):
                messages.append("llm_batch() takes (prompt, text) pairs")
                continue
            prompt, text = (protocol.valid_text(x) if isinstance(x, str) else x for x in entry)
            size = (
                len(prompt) + len(text) if isinstance(prompt, str) and isinstance(text, str) else 0
            )
            if size > room:
                messages.append(f"the batch is over {self.config.max_llm_batch_chars:,} characters")
                continue
            room -= size
            messages.append({"prompt": prompt, "text": text})

        async def answer(index: int, message: dict[str, Any] | str) -> dict[str, Any]:
            if isinstance(message, str):
                return replies.llm_refusal(message)
            async with gate:
                return await self._reply_llm(message, in_run + index + 1)

        results = await asyncio.gather(*(answer(i, m) for i, m in enumerate(messages)))
        return replies.llm_batch_result(list(results))

    async def _exchange(self, request: dict[str, Any], reply_cap: int) -> tuple[dict, float, int]:
        """Send one request; serve llm() calls until the reply. Returns (reply, wait, llm calls).

        The budget is wall-clock time since the request was sent, minus the time spent awaiting
        real model calls. Refused llm() calls are not deducted, so code that loops on them cannot
        hold the call (and this process's attention) open beyond the limit.
        """
        budget = self.config.call_timeout_s + self.config.kill_grace_s
        runs_code = request["op"] != "read"
        cap = max(reply_cap, self._llm_cap) if runs_code else reply_cap
        llm_wait = excluded = 0.0
        requests = 0
        self._batches = []
        started = time.perf_counter()
        self._send(request)
        while True:
            remaining = budget - (time.perf_counter() - started - excluded)
            if remaining <= 0:
                # Checked here too: a read from a full buffer returns at once, so a timeout
                # around the read alone never fires for a worker that streams requests.
                raise TimeoutError()
            async with asyncio.timeout(remaining):
                message = await self._recv(cap)
            op = message.get("op")
            if op not in ("llm", "llm_batch"):
                return message, llm_wait, requests
            if not runs_code:
                raise replies.ProtocolViolation("an llm() request outside of running code")
            if self._writer is not None and self._writer.get_write_buffer_size():
                # Answers left unread fill the pipe, then this buffer: an honest worker reads
                # each answer before it asks again.
                raise replies.ProtocolViolation("a request before the last answer was read")
            mark = time.perf_counter()
            if op == "llm":
                requests += 1
                answer = await self._reply_llm(message, requests)
            else:
                entries = message.get("requests")
                # An honest worker sends no more than one run's llm() budget in a batch.
                if not isinstance(entries, list) or not entries:
                    raise replies.ProtocolViolation("an llm_batch() request without entries")
                if len(entries) > self.config.max_llm_calls_per_run:
                    raise replies.ProtocolViolation(f"an llm_batch() of {len(entries):,} entries")
                answer = await self._answer_batch(entries, requests)
                requests += len(entries)
                self._batches.append(len(entries))
            spent = time.perf_counter() - mark
            llm_wait += spent
            if not answer.get("refused"):
                excluded += spent
            self._send(answer)

    # -- public calls -----------------------------------------------------------------------

    async def run(self, code: str) -> ReplResult:
        """Run `code` in the REPL. Never raises for anything the code (or the worker) does."""
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
            request = {"op": op, "code": code, "timeout": self.config.call_timeout_s}
            try:
                reply, llm_wait, requests = await self._exchange(request, self._result_cap)
                if reply.get("op") != "result":
                    raise replies.ProtocolViolation(f"a reply of kind {reply.get('op')!r}")
            except BaseException as exc:
                error, timed_out = await self._call_failed(exc)
                return ReplResult.failed(started, error, timed_out=timed_out, restarted=restarted)
            result = ReplResult.from_reply(
                reply, self.config.max_output_chars, started, llm_wait, requests, restarted
            )
            result.llm_batches = tuple(self._batches)
            # The reward asks whether any tool touched the document: a worker may only claim
            # it for code that names `doc` (the worker checks the parsed cell; this is the text).
            result.touched_document = result.touched_document and _names_doc(code)
            return result

    async def _call_failed(self, exc: BaseException) -> tuple[str, bool]:
        """Stop the worker after a failed call; the model's error text and whether it timed out.

        Re-raises anything that is not the worker's doing (cancellation), after the worker is
        stopped: its state is unknown then.
        """
        if isinstance(exc, TimeoutError):
            limit = self.config.call_timeout_s
            self._drop_worker(f"it was killed after exceeding the {limit:g} s time limit")
            return replies.timeout_error(limit), True
        if isinstance(exc, replies.ProtocolViolation):
            self._drop_worker("it broke the sandbox protocol")
            return replies.violation_error(str(exc)), False
        if not isinstance(exc, READ_ERRORS):
            self._drop_worker("the previous call was cancelled")
            raise exc
        # The pipe closed: ask the fork server how the worker ended, to tell the model which
        # limit it hit. The worker is killed first, so nothing awaited here can leave it running.
        server, token = self._handle.server, self._handle.token
        self._handle.kill()
        try:
            status = await worker_exit_status(server, token)
        except BaseException:
            self._drop_worker("the previous call was cancelled")
            raise
        error, reason = replies.describe_death(
            status, self.config.memory_mb, self.config.cpu_seconds
        )
        self._drop_worker(reason)
        return error, False

    async def read_variable(self, name: str, max_chars: int | None = None) -> str:
        """The str value of REPL variable `name`; SandboxError if missing, too long or not text.

        At most `max_chars` (and never more than the config's `max_read_chars`) characters are
        transferred; a longer variable is an error.
        """
        limit = self.config.max_read_chars
        if max_chars is not None:
            limit = max(0, min(limit, max_chars))
        async with self._lock:
            if self._closed:
                raise SandboxError("the sandbox session is closed")
            if not self._alive:
                raise SandboxError(
                    f"no REPL variable named {name!r}: the sandbox was restarted "
                    f"({self._lost or 'worker stopped'}) and earlier variables are lost"
                )
            request = {"op": "read", "name": name, "max_chars": limit}
            try:
                reply, _, _ = await self._exchange(request, protocol.frame_cap(limit))
            except (TimeoutError, *READ_ERRORS):
                self._drop_worker("it stopped answering")
                raise SandboxError("the sandbox worker stopped answering") from None
            except BaseException:
                self._drop_worker("the previous call was cancelled")
                raise
            value = reply.get("value")
            if reply.get("op") != "value" or (reply.get("ok") and not isinstance(value, str)):
                self._drop_worker("it broke the sandbox protocol")
                raise SandboxError("unexpected reply from the sandbox worker")
            if not reply.get("ok"):
                raise SandboxError(str(reply.get("error", "variable unavailable"))[:2000])
            if len(value) > limit:
                raise SandboxError(
                    f"{name!r} has {len(value):,} characters; the limit is {limit:,}"
                )
            return value

    async def _unsafe_exec_for_tests(self, code: str) -> ReplResult:
        """Run plain `exec` (real builtins) inside the confined worker: tests of the OS layer.

        Only sessions started with `_allow_unsafe_exec_for_tests=True` accept it; sandboxed code
        has no way to send this request.
        """
        if not self._allow_unsafe_exec:
            raise SandboxError("this session was not started for unsafe test execution")
        return await self._run(code, "unsafe_exec")


_DOC_NAME = re.compile(r"\bdoc\b")


def _names_doc(code: str) -> bool:
    return _DOC_NAME.search(code) is not None
