"""A pool of math-verify worker processes with a hard deadline per call.

Why processes: math-verify's timeouts use SIGALRM, which only works in a main thread, and
with them disabled a single answer such as ``10^{10^{10}}`` can hold the GIL and freeze every
thread of the process. Each worker runs math-verify in its own main thread; the parent waits at
most ``timeout + grace`` for a reply and otherwise kills the worker (it is replaced on demand).

Workers start lazily: a pool that is never asked to verify anything costs nothing. Workers are
plain subprocesses running ``python -m gsm8k_multireward._verify_worker`` (no re-import of the
caller's ``__main__``), are killed with the parent by the kernel (PR_SET_PDEATHSIG), and are
stopped by ``close()`` or at interpreter exit.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
import weakref
from concurrent.futures import Future
from pathlib import Path

# Extra time the parent allows past the worker's own timer for IPC and scheduling.
DEFAULT_GRACE_SECONDS = 0.5
# Starting a worker imports sympy and math-verify; generous because the machine may be busy.
DEFAULT_STARTUP_TIMEOUT = 120.0


class WorkerStartupError(RuntimeError):
    """A math-verify worker could not be started (an installation problem, not an answer)."""


class PoolClosedError(RuntimeError):
    """The pool was closed while or before a call was made."""


class _Spawner:
    """Starts every worker from one long-lived daemon thread.

    PR_SET_PDEATHSIG fires when the *thread* that forked the child exits, so children must not
    be started from short-lived caller threads.
    """

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[list[str], dict[str, str], Future]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def spawn(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._requests = queue.SimpleQueue()
                self._pid = os.getpid()
                self._thread = threading.Thread(
                    target=self._run, name="gsm8k-verify-spawner", daemon=True
                )
                self._thread.start()
            future: Future[subprocess.Popen[bytes]] = Future()
            self._requests.put((argv, env, future))
        return future.result()

    def _run(self) -> None:
        while True:
            argv, env, future = self._requests.get()
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=env,
                    bufsize=0,
                    close_fds=True,
                )
            except BaseException as exc:  # pragma: no cover - reported to the caller
                future.set_exception(exc)
            else:
                future.set_result(proc)


_SPAWNER = _Spawner()


class _Worker:
    __slots__ = ("buffer", "proc")

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.buffer = bytearray()

    def send(self, payload: dict) -> None:
        assert self.proc.stdin is not None
        data = json.dumps(payload).encode() + b"\n"
        fd = self.proc.stdin.fileno()
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    def read_line(self, deadline: float) -> dict | None:
        """The next reply, or None if the deadline passes or the worker exits first."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            newline = self.buffer.find(b"\n")
            if newline >= 0:
                line = bytes(self.buffer[:newline])
                del self.buffer[: newline + 1]
                return json.loads(line)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None  # EOF: the worker died
            self.buffer.extend(chunk)

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        # SIGKILL cannot be ignored; the bound only guards against a kernel hiccup.
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    # Make the package importable in the child even when it is used from a source checkout.
    package_parent = str(Path(__file__).resolve().parent.parent)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = package_parent if not existing else package_parent + os.pathsep + existing
    # One math thread per worker: the pool provides the parallelism.
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


class VerifyWorkerPool:
    """Runs math-verify calls in up to ``max_workers`` processes, each bounded by ``timeout``."""

    def __init__(
        self,
        max_workers: int = 10,
        timeout: float = 5.0,
        *,
        grace: float = DEFAULT_GRACE_SECONDS,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    ) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1, got {max_workers}")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {timeout}")
        if timeout + grace <= 0:
            # A negative grace (deadline below the worker's own timer) is allowed so the
            # parent-side kill can be exercised; the deadline itself must stay positive.
            raise ValueError(f"timeout + grace must be > 0, got {timeout} + {grace}")
        self.max_workers = max_workers
        self.timeout = float(timeout)
        self.grace = float(grace)
        self.startup_timeout = float(startup_timeout)
        self._slots = threading.BoundedSemaphore(max_workers)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._live: set[_Worker] = set()
        self._closed = False
        self._pid = os.getpid()
        self.timeouts = 0  # calls that hit the deadline (worker killed)
        self.started = 0  # workers started over the pool's life
        # Runs on close(), on garbage collection and at interpreter exit, whichever is first.
        self._finalizer = weakref.finalize(
            self, _stop_workers, self._lock, self._live, self._idle, self._pid
        )

    @property
    def live_workers(self) -> int:
        with self._lock:
            return len(self._live)

    def worker_pids(self) -> list[int]:
        with self._lock:
            return [worker.proc.pid for worker in self._live]

    def verify(self, answer: str, gold: str) -> float:
        """1.0 if math-verify finds ``answer`` equal to ``gold``, else 0.0 (also on timeout)."""
        if self._closed:
            raise PoolClosedError("the math-verify pool is closed")
        with self._slots:
            worker = self._checkout()
            deadline = time.monotonic() + self.timeout + self.grace
            try:
                worker.send({"answer": answer, "gold": gold, "timeout": self.timeout})
                reply = worker.read_line(deadline)
            except (OSError, ValueError):
                reply = None
            if reply is None:
                self._discard(worker)
                if self._closed:
                    raise PoolClosedError("the math-verify pool was closed during a call")
                with self._lock:
                    self.timeouts += 1
                return 0.0
            self._checkin(worker)
            return float(reply.get("score", 0.0))

    def close(self) -> None:
        """Stop every worker. Safe to call more than once; in-flight calls raise."""
        with self._lock:
            self._closed = True
        self._finalizer()

    def __enter__(self) -> VerifyWorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _checkout(self) -> _Worker:
        with self._lock:
            if self._pid != os.getpid():
                # Forked copy of the pool: the workers belong to the parent; start afresh.
                self._pid = os.getpid()
                self._idle.clear()
                self._live.clear()
                self._finalizer.detach()
                self._finalizer = weakref.finalize(
                    self, _stop_workers, self._lock, self._live, self._idle, self._pid
                )
            while self._idle:
                worker = self._idle.pop()
                if worker.proc.poll() is None:
                    return worker
                self._live.discard(worker)  # died while idle; reap below
                worker.kill()
        return self._start_worker()

    def _checkin(self, worker: _Worker) -> None:
        with self._lock:
            if not self._closed and worker in self._live:
                self._idle.append(worker)
                return
        worker.kill()

    def _discard(self, worker: _Worker) -> None:
        with self._lock:
            self._live.discard(worker)
        worker.kill()

    def _start_worker(self) -> _Worker:
        argv = [sys.executable, "-m", "gsm8k_multireward._verify_worker", str(os.getpid())]
        worker = _Worker(_SPAWNER.spawn(argv, _worker_env()))
        with self._lock:
            if self._closed:
                worker.kill()
                raise PoolClosedError("the math-verify pool is closed")
            self._live.add(worker)
            self.started += 1
        reply = worker.read_line(time.monotonic() + self.startup_timeout)
        if reply is None or not reply.get("ready"):
            self._discard(worker)
            detail = (reply or {}).get("error", "no reply before the startup timeout")
            raise WorkerStartupError(f"math-verify worker failed to start: {detail}")
        return worker


def _stop_workers(
    lock: threading.Lock, live: set[_Worker], idle: list[_Worker], owner_pid: int
) -> None:
    with lock:
        busy = [worker for worker in live if worker not in idle]
        resting = list(idle)
        live.clear()
        idle.clear()
    if owner_pid != os.getpid():
        return  # a forked copy must not kill the parent's workers
    for worker in resting:
        worker.kill()
    # A busy worker's pipes belong to the thread waiting on it: kill and reap the process
    # here, and let that thread see end-of-file and close its pipes.
    for worker in busy:
        try:
            worker.proc.kill()
            worker.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
