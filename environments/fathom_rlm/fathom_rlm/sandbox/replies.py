"""Parent side of the worker protocol: reading frames, and the texts the model sees on failure.

The worker runs model code and may be compromised, so nothing it sends is trusted: a frame that
is not a JSON object (too deep, invalid UTF-8, a list...) is a protocol violation, and every
string in it is made valid Unicode before it reaches the agent or a model.
"""

from __future__ import annotations

import json
import signal
from typing import Any

from . import protocol

_LOST = "variables from earlier calls are lost (`doc` is still available)"


class ProtocolViolation(Exception):
    """The worker sent something no honest worker sends; it is treated as compromised."""


def decode_frame(payload: bytes) -> dict[str, Any]:
    """The JSON object in `payload`, its strings made valid; ProtocolViolation otherwise.

    Nesting deeper than the JSON decoder's recursion guard raises RecursionError, which is
    caught like any other decoding failure.
    """
    try:
        message = json.loads(payload)
    except Exception:
        raise ProtocolViolation("a message that is not valid JSON") from None
    if not isinstance(message, dict):
        raise ProtocolViolation("a message that is not a JSON object")
    for key, value in message.items():
        if type(value) is str:
            message[key] = protocol.valid_text(value)
    return message


def as_count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def llm_refusal(error: str) -> dict[str, Any]:
    # "refused" tells the worker to charge the wait to the call, as the parent does.
    return {"op": "llm_result", "ok": False, "error": error, "refused": True}


def llm_batch_result(results: list[dict[str, Any]]) -> dict[str, Any]:
    """One llm_result per entry, in order; "refused" when every entry was refused at once."""
    refused = all(r.get("refused") for r in results)
    return {"op": "llm_batch_result", "results": results, "refused": refused}


def restart_note(reason: str) -> str:
    return (
        f"[sandbox restarted: the previous worker stopped because {reason}; variables from "
        "earlier calls are gone, `doc` is loaded again]\n"
    )


def timeout_error(limit: float) -> str:
    return (
        f"TimeoutError: the call did not finish within {limit:g} s and the sandbox was "
        f"restarted; {_LOST}"
    )


def violation_error(detail: str) -> str:
    return (
        f"SandboxCrash: the sandbox worker broke the sandbox protocol ({detail}) and was "
        f"stopped; {_LOST}"
    )


def describe_death(status: dict[str, Any], memory_mb: int, cpu_seconds: int) -> tuple[str, str]:
    """(error for the model, reason for the next restart note) for a worker that exited.

    `status` is the fork server's report: the worker's exit code or signal, its CPU seconds and
    peak memory; {"state": "unknown"} when the fork server could not say.
    """
    sig, code = status.get("signal"), status.get("code")
    cpu = status.get("cpu_s") if isinstance(status.get("cpu_s"), (int, float)) else 0.0
    rss_mb = as_count(status.get("maxrss_kb")) / 1024
    if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= cpu_seconds):
        return (
            f"CPULimitError: the sandbox worker used up its CPU budget ({cpu_seconds} s over "
            f"the session) and was stopped; {_LOST}",
            f"it used up its {cpu_seconds} s CPU budget",
        )
    out_of_memory = code == protocol.EXIT_OUT_OF_MEMORY or (
        sig in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS) and rss_mb >= memory_mb / 2
    )
    if out_of_memory:
        return (
            f"MemoryError: the sandbox worker ran out of memory (limit {memory_mb} MB) and was "
            f"stopped; {_LOST}",
            f"it ran out of memory ({memory_mb} MB limit)",
        )
    if status.get("state") == "server-gone":
        what = "its fork server stopped"
    elif isinstance(sig, int):
        what = f"it was killed by signal {_signal_name(sig)}"
    elif isinstance(code, int):
        what = f"it exited with code {code}"
    else:
        what = "it stopped for an unknown reason"
    return (
        f"SandboxCrash: the sandbox worker died during this call ({what}) and was restarted; "
        f"{_LOST}",
        what,
    )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
