"""Child process that runs math-verify for ``worker_pool.VerifyWorkerPool``.

Protocol: one JSON object per line on stdin ``{"answer": str, "gold": str, "timeout": float}``,
one JSON object per line on stdout ``{"score": 0.0 | 1.0}``. The first line written is
``{"ready": true}`` once math-verify is imported and warm, or ``{"error": "..."}``.

math-verify runs in this process's main thread, where an interval timer can interrupt it.
The parent also enforces its own deadline and kills this process if it ever stops answering
(a C-level computation that holds the interpreter ignores the timer).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import traceback

# Keeps a runaway bignum or expression tree from eating the machine's memory.
MEMORY_LIMIT_BYTES = 4 * 1024**3


class _Deadline(BaseException):
    """Raised by the timer; a BaseException so library ``except Exception`` cannot swallow it."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _Deadline


def _die_with_parent(parent_pid: int) -> None:
    # The kernel kills us if the parent dies, even while we are stuck in C code.
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:
        os._exit(0)


def _limit_memory() -> None:
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = MEMORY_LIMIT_BYTES
        if hard != resource.RLIM_INFINITY:
            limit = min(hard, limit)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):
        pass


def _write(out: object, payload: dict) -> None:
    out.write(json.dumps(payload).encode() + b"\n")  # type: ignore[attr-defined]
    out.flush()  # type: ignore[attr-defined]


def main() -> int:
    parent_pid = int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid()
    _die_with_parent(parent_pid)
    _limit_memory()
    out = sys.stdout.buffer
    # Nothing but protocol lines may reach stdout.
    sys.stdout = sys.stderr
    try:
        from math_verify import parse, verify

        # We run with math-verify's own signal timeouts off (our timer covers parse+verify);
        # silence its warning about that and its per-answer log lines.
        logging.getLogger("math_verify").setLevel(logging.CRITICAL)
        logging.getLogger().setLevel(logging.CRITICAL)
        verify(parse("\\boxed{1}", parsing_timeout=None), parse("\\boxed{1}", parsing_timeout=None))
    except BaseException:
        _write(out, {"error": traceback.format_exc(limit=5)})
        return 1
    signal.signal(signal.SIGALRM, _on_alarm)
    gold_cache: dict[str, object] = {}
    _write(out, {"ready": True})
    for line in sys.stdin.buffer:
        request = json.loads(line)
        score = 0.0
        try:
            try:
                signal.setitimer(signal.ITIMER_REAL, float(request["timeout"]))
                gold = gold_cache.get(request["gold"])
                if gold is None:
                    gold = parse(f"\\boxed{{{request['gold']}}}", parsing_timeout=None)
                    if len(gold_cache) > 10_000:
                        gold_cache.clear()
                    gold_cache[request["gold"]] = gold
                answer = parse(f"\\boxed{{{request['answer']}}}", parsing_timeout=None)
                score = 1.0 if verify(gold, answer, timeout_seconds=None) else 0.0
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except _Deadline:
            score = 0.0
        except Exception:
            score = 0.0  # unparsable or unsupported input is a wrong answer, not a crash
        _write(out, {"score": score})
    return 0


if __name__ == "__main__":
    sys.exit(main())
