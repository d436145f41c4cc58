"""Soak and fault runs of fathom-rlm: many rollouts at once through the real agent loop, sandbox and
reward against an OpenAI-compatible endpoint (normally the scripted policy server over loopback).

Measured per run: errors, latency the environment adds to each rollout (its wall time minus the
time spent waiting for the model), event-loop lag, peak memory (RSS and PSS) of this process and
every process it started (fork server, sandbox workers), and what was left behind afterwards
(processes, file descriptors, sandbox directories). Optional chaos: rollouts cancelled midway,
sandbox workers and the fork server killed from outside. Used by
`labs/fathom_rlm/benchmarks/fathom_soak.py` and
by the bounded loopback tests in tests/fathom_lab/test_soak_faults.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fathom_rlm.adapters.scoring import document_text
from fathom_rlm.agent import ChatFn, ChatReply, RolloutCaps, RolloutRecord, run_rollout
from fathom_rlm.documents import TaskRecord
from fathom_rlm.rewards import RewardConfig, score_rollout

SANDBOX_DIR_PREFIX = "fathom-sandbox-"


# ------------------------------------------------------------------------ process tree


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def descendants(root: int | None = None, *, zombies: bool = False) -> list[int]:
    """Every process below `root` (default: this process), read from /proc."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields_ = _stat_fields(int(entry))
        if fields_ is None or (fields_[0] == "Z" and not zombies):
            continue
        children.setdefault(int(fields_[1]), []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def memory_kb(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in kB of one process; (0, 0) if it is gone or unreadable."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


class MemorySampler:
    """Samples RSS and PSS of this process tree from a thread; keeps the peaks."""

    def __init__(self, interval_s: float = 0.5, exclude: Sequence[int] = ()) -> None:
        self.interval_s = interval_s
        self.exclude = set(exclude)
        self.peak_rss_kb = self.peak_pss_kb = self.peak_processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        skip: set[int] = set()
        for pid in self.exclude:  # e.g. the policy server: not part of the environment
            skip |= {pid, *descendants(pid)}
        pids = [os.getpid(), *(p for p in descendants() if p not in skip)]
        rss = pss = 0
        for pid in pids:
            r, p = memory_kb(pid)
            rss, pss = rss + r, pss + p
        self.peak_rss_kb = max(self.peak_rss_kb, rss)
        self.peak_pss_kb = max(self.peak_pss_kb, pss)
        self.peak_processes = max(self.peak_processes, len(pids))

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def __enter__(self) -> MemorySampler:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class LagMonitor:
    """Event-loop lag: how late a periodic `asyncio.sleep` wakes up (as verifiers measures it)."""

    def __init__(self, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + self.interval_s
            await asyncio.sleep(self.interval_s)
            self.lags.append(max(0.0, loop.time() - due))

    async def __aenter__(self) -> LagMonitor:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


@dataclass(frozen=True)
class Leftovers:
    """What a run left behind, relative to a snapshot taken before it."""

    processes: list[int]
    fds: int
    sandbox_dirs: list[str]

    @property
    def clean(self) -> bool:
        return not self.processes and self.fds <= 0 and not self.sandbox_dirs


@dataclass(frozen=True)
class Snapshot:
    processes: frozenset[int]
    fds: int
    sandbox_dirs: frozenset[str]

    @classmethod
    def take(cls, keep: Sequence[int] = ()) -> Snapshot:
        """This process's descendants (minus `keep` and theirs, and minus the live sandbox fork
        server, which is shared and outlives runs: its workers do count), open fds and sandbox
        dirs."""
        skip: set[int] = set(_fork_server_pids())
        for pid in keep:
            skip |= {pid, *descendants(pid, zombies=True)}
        processes = frozenset(p for p in descendants(zombies=True) if p not in skip)
        from fathom_rlm.sandbox import session

        # Where the sandbox makes its working directories (its own root if one is set).
        base = Path(getattr(session, "WORKDIR_ROOT", None) or tempfile.gettempdir())
        dirs = frozenset(p.name for p in base.glob(SANDBOX_DIR_PREFIX + "*"))
        return cls(processes, len(os.listdir("/proc/self/fd")), dirs)

    def leftovers(self, after: Snapshot) -> Leftovers:
        return Leftovers(
            sorted(after.processes - self.processes),
            after.fds - self.fds,
            sorted(after.sandbox_dirs - self.sandbox_dirs),
        )


def _fork_server_pids() -> list[int]:
    """The warm fork server's pid (the public report starts one if none is running)."""
    from fathom_rlm.sandbox import isolation_report

    pid = isolation_report()["fork_server_pid"]
    return [pid] if isinstance(pid, int) else []


async def settle(before: Snapshot, keep: Sequence[int] = (), timeout_s: float = 30.0) -> Leftovers:
    """Leftovers once the run's processes had time to exit (a busy machine reaps slowly)."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = before.leftovers(Snapshot.take(keep))
        if left.clean or time.monotonic() > deadline:
            return left
        await asyncio.sleep(0.1)


# ----------------------------------------------------------------------------- chaos


@dataclass
class Chaos:
    """Disturbances during a run: rollouts cancelled midway, processes killed from outside."""

    cancel_every: int = 0
    """Cancel every k-th rollout after its first model reply (0: none)."""
    kill_workers: int = 0
    """Sandbox workers SIGKILLed from outside, spread over the run."""
    kill_fork_servers: int = 0
    """Times the sandbox fork server is SIGKILLed from outside."""
    killed: Counter[str] = field(default_factory=Counter)

    def schedule(self, n: int) -> dict[int, str]:
        """Which rollout's start triggers which kill: spread evenly over the run (by rollouts
        started, not by time, so every planned kill happens however fast the run goes)."""
        rng = random.Random(0)
        plan = ["worker"] * self.kill_workers + ["fork_server"] * self.kill_fork_servers
        rng.shuffle(plan)
        step = n / (len(plan) + 1)
        return {int(step * (k + 1)): target for k, target in enumerate(plan)}

    async def strike(self, target: str) -> None:
        """SIGKILL one sandbox worker, or the fork server, from outside (by pid, like an OOM
        killer would); waits a while for a victim, since between cells no worker may be alive."""
        from fathom_rlm.sandbox import isolation_report

        for _ in range(200):
            server = (await asyncio.to_thread(isolation_report))["fork_server_pid"]
            workers = descendants(server) if isinstance(server, int) else []
            victims = [server] if target == "fork_server" else workers
            if victims:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(random.choice(victims), signal.SIGKILL)
                    self.killed[target] += 1
                return
            await asyncio.sleep(0.05)


# ---------------------------------------------------------------------------- rollouts


class TimedChat:
    """A chat function that adds up the time spent waiting for the model and notes fault replies
    (an exception, an empty message, an injected malformed call)."""

    def __init__(self, chat: ChatFn) -> None:
        self.chat = chat
        self.model_s = 0.0
        self.seen: Counter[str] = Counter()

    async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        # Every request, root or sub-call, shows the tool results of its own agent so far: a
        # sandbox that died under it (killed from outside) is seen here.
        tool_text = " ".join(str(m.get("content")) for m in messages if m.get("role") == "tool")
        if any(marker in tool_text for marker in _RESTART_MARKERS):
            self.seen["sandbox_restart"] = 1
        start = time.perf_counter()
        try:
            reply = await self.chat(messages, tools)
        except Exception as exc:
            self.seen[type(exc).__name__] += 1
            raise
        finally:
            self.model_s += time.perf_counter() - start
        message = reply.message
        calls = message.get("tool_calls") or []
        if not message.get("content") and not calls:
            self.seen["empty"] += 1
        if any(str(c.get("id", "")).startswith("fault_") for c in calls):
            self.seen["malformed"] += 1
        return reply


async def one_rollout(
    index: int,
    row: TaskRecord,
    chat: ChatFn,
    caps: RolloutCaps,
    *,
    timeout_s: float,
    cancel: bool = False,
) -> dict[str, Any]:
    """One rollout; its outcome as a small dict. Failures and cancellations are recorded."""
    timed = TimedChat(chat)
    record = RolloutRecord()
    out: dict[str, Any] = {"index": index, "family": row.family, "error": None}
    start = time.perf_counter()
    try:
        document = await document_text(row)
        task = asyncio.ensure_future(
            run_rollout(document, row.question, timed, caps, record=record)
        )
        if cancel:
            while not task.done() and record.turns < 1:
                await asyncio.sleep(0.01)
            task.cancel()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout_s)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            raise
        config = RewardConfig.from_caps(caps)
        scores = await asyncio.to_thread(score_rollout, record, row, config, document=document)
        out.update(reward=scores["reward"], correctness=scores["correctness"])
    except asyncio.CancelledError:
        if not cancel:
            raise
        out["error"] = "cancelled"
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:300]
    wall = time.perf_counter() - start
    out.update(
        # A rollout that raised never finished its record: name how it ended instead.
        ended_by=record.ended_by if out["error"] is None else out["error"].split(":")[0],
        tool_errors=record.tool_errors,
        wall_s=wall,
        model_s=timed.model_s,
        env_s=max(0.0, wall - timed.model_s),
        faults_seen=dict(timed.seen),
    )
    return out


# What a root tool message says when its sandbox worker died or could not start (killed from
# outside, a dead fork server): such a rollout met a fault even if the model never did.
_RESTART_MARKERS = ("SandboxCrash", "are lost", "REPL stopped", "could not start", "restarted")


def _quantile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class SoakReport:
    rollouts: list[dict[str, Any]]
    wall_s: float
    lags: list[float]
    peak_rss_mb: float
    peak_pss_mb: float
    peak_processes: int
    leftovers: Leftovers
    chaos: dict[str, int]

    def summary(self) -> dict[str, Any]:
        env = [r["env_s"] for r in self.rollouts if r["error"] is None]
        errors = Counter(r["error"].split(":")[0] for r in self.rollouts if r["error"])
        return {
            "rollouts": len(self.rollouts),
            "errors": sum(errors.values()),
            "errors_by_kind": dict(errors),
            "ended_by": dict(Counter(r["ended_by"] for r in self.rollouts)),
            "mean_reward": statistics.fmean(r.get("reward", 0.0) for r in self.rollouts),
            "wall_s": round(self.wall_s, 1),
            "rollouts_per_s": round(len(self.rollouts) / self.wall_s, 2) if self.wall_s else 0,
            "env_added_ms_p50": round(1000 * _quantile(env, 0.50), 1),
            "env_added_ms_p95": round(1000 * _quantile(env, 0.95), 1),
            "loop_lag_ms_p99": round(1000 * _quantile(self.lags, 0.99), 1),
            "loop_lag_ms_max": round(1000 * max(self.lags, default=0.0), 1),
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            "peak_pss_mb": round(self.peak_pss_mb, 1),
            "peak_processes": self.peak_processes,
            "leftover_processes": len(self.leftovers.processes),
            "leftover_fds": max(0, self.leftovers.fds),
            "leftover_sandbox_dirs": len(self.leftovers.sandbox_dirs),
            "chaos": self.chaos,
        }


async def soak(
    base_url: str,
    rows: Sequence[TaskRecord],
    *,
    n: int,
    concurrency: int,
    caps: RolloutCaps | None = None,
    model: str = "fathom-reference",
    request_timeout_s: float = 120.0,
    rollout_timeout_s: float = 600.0,
    chaos: Chaos | None = None,
    keep_pids: Sequence[int] = (),
) -> SoakReport:
    """`n` rollouts over `rows` (cycled), at most `concurrency` at a time, against `base_url`.

    `keep_pids`: processes this one started that are not the environment's (a policy server);
    they are left out of the memory peak and the leak check.
    """
    # The v1 harness's own chat function (plain HTTP, no retries): the client verifiers gives
    # a harness, without an SDK's per-request overhead in the measurement.
    from fathom_rlm.adapters.harness import interception_chat, interception_client
    from fathom_rlm.sandbox import warm_up

    caps = caps or RolloutCaps()
    chaos = chaos or Chaos()
    await asyncio.to_thread(warm_up)  # the warm fork server is shared state, not a leak
    client = interception_client(base_url, "EMPTY", request_timeout_s)
    chat = interception_chat(client, model)
    before = Snapshot.take(keep_pids)
    gate = asyncio.Semaphore(concurrency)

    strikes = chaos.schedule(n)
    strike_tasks: list[asyncio.Task[None]] = []

    async def job(i: int) -> dict[str, Any]:
        async with gate:
            cancel = chaos.cancel_every > 0 and i % chaos.cancel_every == chaos.cancel_every - 1
            if i in strikes:  # strikes while this and other rollouts are under way
                strike_tasks.append(asyncio.create_task(chaos.strike(strikes[i])))
            row = rows[i % len(rows)]
            return await one_rollout(i, row, chat, caps, timeout_s=rollout_timeout_s, cancel=cancel)

    started = time.perf_counter()
    with MemorySampler(exclude=keep_pids) as memory:
        async with LagMonitor() as lag:
            try:
                results = list(await asyncio.gather(*(job(i) for i in range(n))))
                await asyncio.gather(*strike_tasks)
            finally:
                for task in strike_tasks:
                    task.cancel()
                await client.aclose()
    wall = time.perf_counter() - started
    await asyncio.to_thread(warm_up)  # a killed fork server is replaced, as before the run
    left = await settle(before, keep_pids)
    return SoakReport(
        results,
        wall,
        lag.lags,
        memory.peak_rss_kb / 1024,
        memory.peak_pss_kb / 1024,
        memory.peak_processes,
        left,
        dict(chaos.killed),
    )
