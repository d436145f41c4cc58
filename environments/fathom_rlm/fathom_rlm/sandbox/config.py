"""What a session is configured with and returns, the llm callback contract, and the report of
which isolation layers this machine supports.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from . import replies
from .launcher import SandboxError, fork_server, interpreter_path

NetworkMode = Literal["auto", "netns", "seccomp", "none"]
LLMCallback = Callable[[str, str], Awaitable[str]]


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
    max_llm_calls_per_run: int = 32  # further llm() calls in one run() are refused
    max_llm_calls_per_session: int | None = None  # None: no cap over the session's life
    max_llm_request_chars: int = 200_000  # prompt + text of one llm() from REPL code
    max_llm_batch_chars: int = 1_000_000  # prompts + texts of one llm_batch() together
    max_llm_parallel: int = 5  # llm_batch() entries answered at once
    max_read_chars: int = 1_000_000  # the longest variable read_variable() returns

    def worker_settings(
        self, *, workdir: str | None, network: str, allow_unsafe_exec: bool, token: str
    ) -> dict[str, Any]:
        """What the fork server hands a new worker: its directory, limits and isolation."""
        return {
            "workdir": workdir,
            "memory_mb": self.memory_mb,
            "cpu_seconds": self.cpu_seconds,
            "max_open_files": self.max_open_files,
            "max_processes": self.max_processes,
            "max_output_chars": self.max_output_chars,
            "max_code_chars": self.max_code_chars,
            "max_llm_calls_per_run": self.max_llm_calls_per_run,
            "max_llm_request_chars": self.max_llm_request_chars,
            "max_llm_batch_chars": self.max_llm_batch_chars,
            "uid": self.uid,
            "uid_base": self.uid_base,
            "network": network,
            "filesystem_lock": self.filesystem_lock,
            "syscall_filter": self.syscall_filter,
            "allow_unsafe_exec_for_tests": allow_unsafe_exec,
            "token": token,
        }


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
    llm_batches: tuple[int, ...] = ()  # the entries of each llm_batch() the code asked

    @classmethod
    def from_reply(
        cls,
        reply: dict[str, Any],
        limit: int,
        started: float,
        llm_wait: float,
        llm_requests: int,
        restarted: str | None,
    ) -> ReplResult:
        """The result of a call from the worker's reply, none of it trusted; `limit` is the
        session's output cap."""
        output = reply.get("output")
        output = output if isinstance(output, str) else ""
        if len(output) > limit + 400:  # the worker already cut it; do not trust that
            output = output[:limit] + "\n[output truncated]"
        if restarted is not None:
            output = replies.restart_note(restarted) + output
        error = reply.get("error")
        error = str(error)[:4000] if error is not None else None
        return cls(
            output=output,
            error=error,
            wall_s=time.perf_counter() - started,
            output_chars=replies.as_count(reply.get("output_chars")),
            truncated=bool(reply.get("truncated")),
            timed_out=bool(reply.get("timed_out")),
            touched_document=bool(reply.get("touched_document")),
            llm_calls=llm_requests,  # counted here: the worker's own count is not trusted
            llm_wait_s=llm_wait,
            worker_restarted=restarted is not None,
        )

    @classmethod
    def failed(
        cls, started: float, error: str, *, timed_out: bool, restarted: str | None
    ) -> ReplResult:
        """The result of a call the worker did not complete."""
        return cls(
            output=replies.restart_note(restarted) if restarted is not None else "",
            error=error,
            wall_s=time.perf_counter() - started,
            output_chars=0,
            truncated=False,
            timed_out=timed_out,
            touched_document=False,
            llm_calls=0,
            worker_restarted=restarted is not None,
        )


def wants_netns(config: SandboxConfig) -> bool:
    return config.network in ("auto", "netns")


def warm_up(config: SandboxConfig | None = None) -> None:
    """Start the fork server now instead of on the first session (it takes ~0.1-0.2 s)."""
    fork_server(wants_netns(config or SandboxConfig()))


def network_isolation(config: SandboxConfig, caps: dict[str, Any]) -> str:
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
    server = fork_server(wants_netns(config))
    caps = server.caps
    return {
        "network": network_isolation(config, caps),
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
        "python": interpreter_path(),
    }


def refuse_llm(
    config: SandboxConfig, message: dict[str, Any], in_run: int, in_session: int, attached: bool
) -> str | None:
    """Why the parent turns this llm() request down by itself, or None; `in_run` counts this
    call's requests so far, `in_session` the session's answered ones.

    The worker checks the same caps; they are checked again here because the worker runs
    model code and may not be honest.
    """
    prompt, text = message.get("prompt"), message.get("text")
    if not isinstance(prompt, str) or not isinstance(text, str):
        return "llm() takes two str arguments"
    if len(prompt) + len(text) > config.max_llm_request_chars:
        return (
            f"llm() prompt and text have {len(prompt) + len(text):,} characters together; "
            f"the limit is {config.max_llm_request_chars:,}"
        )
    if in_run > config.max_llm_calls_per_run:
        return f"llm() was called more than {config.max_llm_calls_per_run} times in this call"
    cap = config.max_llm_calls_per_session
    if cap is not None and in_session >= cap:
        return f"llm() was already called {cap} times in this session"
    if not attached:
        return "llm() is not available: no model is attached to this sandbox"
    return None


async def call_llm(
    llm: LLMCallback, prompt: str, text: str, config: SandboxConfig
) -> dict[str, Any]:
    """Await the llm callback; the llm_result message a worker gets (errors included)."""
    try:
        if config.llm_timeout_s is None:
            answer = await llm(prompt, text)
        else:
            async with asyncio.timeout(config.llm_timeout_s):
                answer = await llm(prompt, text)
    except LLMRefused as exc:
        return replies.llm_refusal(str(exc)[:2000] or "llm() was refused")
    except TimeoutError:
        error = f"llm() took longer than {config.llm_timeout_s} s"
        return {"op": "llm_result", "ok": False, "error": error}
    except Exception as exc:
        # The text of an arbitrary error (a client's, with its URL) is not for the model.
        return {"op": "llm_result", "ok": False, "error": f"llm() failed: {type(exc).__name__}"}
    if not isinstance(answer, str):
        return {"op": "llm_result", "ok": False, "error": "llm() callback returned no text"}
    return {"op": "llm_result", "ok": True, "text": answer}
