"""Faults: the fork server under bursts and death, pathological model code, a hostile worker.

Model code, however pathological, gets an error message and keeps its REPL state; a worker
dies only for a resource limit and the model is told which; a worker that sends anything out of
protocol is stopped with an error result (never an exception out of `run()`); a dead fork
server is replaced and no start or call hangs on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import struct
import threading
from typing import Any

import pytest
from fathom_rlm.sandbox import SandboxConfig, SandboxSession
from fathom_rlm.sandbox import session as session_module
from worker_frames import FRAMES

from .conftest import children_of, wait_until

DOC = "Orvel Dunmar keeps the ledger in Cadrith. " * 50
CONFIG = SandboxConfig(call_timeout_s=5.0, kill_grace_s=1.0)


def _server() -> session_module.ForkServer:
    """The fork server sessions with CONFIG use (other modules may have started others)."""
    return session_module.SERVERS[session_module.wants_netns(CONFIG)]


def _server_pid() -> int:
    server = _server()
    assert server.alive()
    return server.proc.pid


def _exited(pidfd: int) -> bool:
    # A pidfd turns readable when its process exits; pid reuse cannot fool it.
    import select

    return bool(select.select([pidfd], [], [], 0)[0])


# -- fork server: bursts of worker exits, death -----------------------------------------------


def test_fork_server_survives_bursts_of_worker_exits() -> None:
    # Dozens of workers exiting at once used to re-enter the SIGCHLD handler while it iterated
    # its table ("dictionary changed size during iteration"), killing the fork server. Extra
    # SIGCHLDs sent from a thread while the workers exit make that window hard to miss.
    stop = threading.Event()

    def flood(pid: int) -> None:
        while not stop.is_set():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCHLD)

    async def scenario() -> list[int]:
        pids = []
        for _ in range(8):
            sessions = await asyncio.gather(
                *(SandboxSession.start(DOC, config=CONFIG) for _ in range(96))
            )
            pids.append(_server_pid())
            stop.clear()
            flooder = threading.Thread(target=flood, args=(pids[-1],))
            flooder.start()
            try:
                await asyncio.gather(*(s.close() for s in sessions))
                await asyncio.sleep(0.2)
            finally:
                stop.set()
                flooder.join()
        return pids

    pids = asyncio.run(scenario())
    assert len(set(pids)) == 1, f"the fork server was replaced: {pids}"
    server = _server()
    assert server.alive(), "the fork server died after the last burst"
    assert wait_until(lambda: children_of(server.proc.pid, zombies=True) == [])


def test_start_in_flight_when_the_fork_server_dies_is_retried() -> None:
    async def scenario() -> tuple[int, int, str]:
        await (await SandboxSession.start(DOC, config=CONFIG)).close()
        old = _server_pid()
        os.kill(old, signal.SIGSTOP)  # the spawn request below waits in its socket
        try:
            starting = asyncio.create_task(SandboxSession.start(DOC, config=CONFIG))
            await asyncio.sleep(0.3)
            assert not starting.done()
        finally:
            os.kill(old, signal.SIGKILL)
        async with await starting as session:
            result = await session.run("print(len(doc))")
            return old, _server_pid(), result.output

    old, new, output = asyncio.run(scenario())
    assert new != old
    assert output == f"{len(DOC)}\n"


def test_calls_in_flight_when_the_fork_server_dies_get_an_error_not_a_hang() -> None:
    config = SandboxConfig(call_timeout_s=60.0, kill_grace_s=1.0)

    async def scenario():
        async with await SandboxSession.start(DOC, config=config) as session:
            await session.run("kept = 1")
            old = _server_pid()
            worker = os.pidfd_open(session.pid)
            call = asyncio.create_task(session.run("while True:\n    pass"))
            await asyncio.sleep(0.3)
            os.kill(old, signal.SIGKILL)
            # Far below the call's 60 s clock: the worker dies with its fork server.
            failed = await asyncio.wait_for(call, 30)
            assert wait_until(lambda: _exited(worker))
            os.close(worker)
            again = await session.run("print(len(doc))")
            async with await SandboxSession.start(DOC, config=config) as other:
                fresh = await other.run("print(2)")
            return failed, again, fresh, old

    failed, again, fresh, old = asyncio.run(scenario())
    assert failed.error and failed.error.startswith("SandboxCrash:") and not failed.timed_out
    assert "fork server stopped" in failed.error, failed.error
    assert again.worker_restarted and again.output.endswith(f"{len(DOC)}\n")
    assert fresh.output == "2\n" and _server_pid() != old


# -- pathological model code keeps the REPL state ---------------------------------------------


async def _echo_llm(prompt: str, text: str) -> str:
    prompt.encode("utf-8")  # a model client must receive valid text
    text.encode("utf-8")
    return f"[{len(prompt)}:{len(text)}]"


PATHOLOGICAL = [
    ("surrogate_print", "print('a\\ud800b')", "a\ufffdb", None),
    ("surrogate_error", "raise ValueError('bad \\udcff')", None, "ValueError: bad \ufffd"),
    ("surrogate_tail", "'\\ud800' + chr(0xdfff)", "'\\ud800\\udfff'", None),
    ("name_attr_list", "class E(NameError):\n    name = [1]\nraise E('x')", None, "E: x"),
    ("name_attr_dict", "class E(NameError):\n    name = {}\nraise E()", None, "E"),
    ("huge_message", "raise ValueError('x' * 10_000_000)", None, "ValueError: xxx"),
    ("deep_repr", "a = []\nfor i in range(200_000):\n    a = [a]\na", None, "RecursionError"),
    (
        "huge_llm_prompt",
        "llm('p', 'x' * 30_000_000)",
        None,
        "LLMError: llm() prompt and text have 30,000,001 characters",
    ),
    ("surrogate_llm", "print(llm('\\ud800 q', 'x\\udfff'))", "[3:2]", None),
]


def _run_between_state_checks(code: str, config: SandboxConfig, llm: Any = None) -> tuple:
    """Set `kept = 41`, run `code`, then print `kept + 1` in the same session: (result of
    `code`, result of the print, worker pid before, worker pid after)."""

    async def scenario():
        async with await SandboxSession.start(DOC, config=config, llm=llm) as session:
            await session.run("kept = 41")
            pid = session.pid
            result = await session.run(code)
            after = await session.run("print(kept + 1)")
            return result, after, pid, session.pid

    return asyncio.run(scenario())


@pytest.mark.parametrize(
    ("code", "output", "error"),
    [case[1:] for case in PATHOLOGICAL],
    ids=[case[0] for case in PATHOLOGICAL],
)
def test_pathological_code_keeps_the_repl_state(code: str, output: str | None, error) -> None:
    result, after, pid_before, pid_after = _run_between_state_checks(code, CONFIG, _echo_llm)
    assert pid_after == pid_before, f"the worker was replaced: {result.error}"
    assert after.output == "42\n" and not after.worker_restarted
    if output is not None:
        assert output in result.output, result
    if error is None:
        assert result.error is None, result.error
    else:
        assert result.error and result.error.startswith(error), result.error
        result.error.encode("utf-8")
    result.output.encode("utf-8")


# Loops that catch the timeout and go on: each alarm is swallowed, so before the sandbox made
# the timeout uncatchable by these handlers, the call ran until the parent killed the worker
# and the REPL state was lost.
SWALLOWING = [
    (
        "bare_except",
        "while True:\n    try:\n        while True:\n            pass\n    except:\n        pass",
    ),
    (
        "except_timeout_error",
        "while True:\n    try:\n        while True:\n            pass\n"
        "    except TimeoutError:\n        pass",
    ),
]
SWALLOW_CONFIG = SandboxConfig(call_timeout_s=0.5, kill_grace_s=30.0)


@pytest.mark.parametrize("code", [case[1] for case in SWALLOWING], ids=[c[0] for c in SWALLOWING])
def test_a_loop_around_a_handler_cannot_swallow_the_timeout(code: str) -> None:
    result, after, pid_before, pid_after = _run_between_state_checks(code, SWALLOW_CONFIG)
    # The kill grace is far longer than any scheduling delay: only the worker's own interrupt
    # can end the call while the worker lives on.
    assert pid_after == pid_before, result.error
    assert result.timed_out and result.error.startswith("TimeoutError: the call exceeded")
    assert after.output == "42\n" and not after.worker_restarted


JUMPS_OUT_OF_FINALLY = [
    (
        "continue",
        "while True:\n    try:\n        while True:\n            pass\n"
        "    finally:\n        continue",
    ),
    ("break", "for i in range(3):\n    try:\n        pass\n    finally:\n        break"),
    ("return", "def f():\n    try:\n        pass\n    finally:\n        return 1"),
    (
        "return_in_loop",
        "def f():\n    try:\n        pass\n    finally:\n        while True:\n            return 1",
    ),
    (
        "loop_else",
        "while True:\n    try:\n        pass\n    finally:\n"
        "        for i in []:\n            pass\n        else:\n            break",
    ),
]


def test_handlers_still_work_and_jumps_out_of_finally_are_refused() -> None:
    allowed = (
        "try:\n    1 / 0\nexcept:\n    print('caught')\n"
        "try:\n    raise TimeoutError('own')\nexcept TimeoutError as e:\n    print(e)\n"
        "try:\n    pass\nfinally:\n    for i in range(2):\n        continue\n"
        "    def g():\n        return 2\n"
        "print(g())"
    )

    async def scenario():
        async with await SandboxSession.start(DOC, config=CONFIG) as session:
            ok = await session.run(allowed)
            refused = [await session.run(code) for _, code in JUMPS_OUT_OF_FINALLY]
            return ok, refused

    ok, refused = asyncio.run(scenario())
    assert ok.error is None and ok.output == "caught\nown\n2\n", ok
    for (word, _), result in zip(JUMPS_OUT_OF_FINALLY, refused, strict=True):
        expected = "break" if word == "loop_else" else word.split("_")[0]
        assert result.error and f'"{expected}" inside a finally block' in result.error, result


# Cyclic garbage whose generators spin in `finally` while `flag[0]` holds: the collector runs
# those finalizers wherever it triggers, and a swallowed exception there is only "ignored".
SPINNING_GARBAGE = """
flag = [False]
def spin():
    try:
        yield 1
    finally:
        while flag[0]:
            pass
class Box:
    pass
def litter(n):
    for i in range(n):
        b = Box()
        b.me = b
        b.g = spin()
        next(b.g)
"""
GC_CONFIG = SandboxConfig(call_timeout_s=0.3, kill_grace_s=30.0)


def test_the_collector_never_runs_model_finalizers_outside_the_clock() -> None:
    # Each cell leaves one spinning cycle and arms the flag as its last statement, after some
    # number of allocations: sooner or later the collector triggered outside the cell (in the
    # worker's protocol loop) and spun there for ever, so the worker was killed.
    attempt = (
        "flag[0] = False\nkeep = None\nlitter(1)\nkeep = [[] for i in range({n})]\nflag[0] = True"
    )

    async def scenario():
        async with await SandboxSession.start(DOC, config=GC_CONFIG) as session:
            await session.run(SPINNING_GARBAGE + "kept = 41")
            pid = session.pid
            results = []
            for i in range(300):
                results.append(await session.run(attempt.format(n=(i * 263) % 700)))
                if session.pid != pid or results[-1].worker_restarted:
                    break
            return results, await session.run("print(kept + 1)"), pid, session.pid

    results, after, pid_before, pid_after = asyncio.run(scenario())
    assert pid_after == pid_before, results[-1].error
    for result in results:
        # A collection inside the cell may spin until the alarm: that is the call's timeout.
        assert result.error is None or result.error.startswith("TimeoutError: the call exceeded")
    assert after.output == "42\n" and not after.worker_restarted


def test_finalizers_that_swallow_the_timeout_do_not_hold_the_call() -> None:
    # Thousands of spinning finalizers in one collection: each swallowed one alarm, 0.1 s apart,
    # and the cell then went on as if it had not timed out.
    code = "litter(3000)\nflag[0] = True\njunk = [[] for i in range(100_000)]\nprint('done')"

    async def scenario():
        async with await SandboxSession.start(DOC, config=GC_CONFIG) as session:
            await session.run(SPINNING_GARBAGE + "kept = 41")
            pid = session.pid
            result = await session.run(code)
            return result, await session.run("print(kept + 1)"), pid, session.pid

    result, after, pid_before, pid_after = asyncio.run(scenario())
    assert pid_after == pid_before, result.error
    assert result.timed_out and result.error.startswith("TimeoutError: the call exceeded")
    assert "done" not in result.output
    assert after.output == "42\n" and not after.worker_restarted


def test_variable_with_surrogates_reads_as_valid_text() -> None:
    async def scenario():
        async with await SandboxSession.start(DOC, config=CONFIG) as session:
            await session.run("s = 'a\\ud800b'\nbig = 'y' * 3_000_000\nkept = 1")
            value = await session.read_variable("s")
            with pytest.raises(session_module.SandboxError, match="the limit is 100"):
                await session.read_variable("big", max_chars=100)
            with pytest.raises(session_module.SandboxError, match="the limit is 1,000,000"):
                await session.read_variable("big")
            after = await session.run("print(kept)")
            return value, after

    value, after = asyncio.run(scenario())
    assert value == "a\ufffdb"
    assert after.output == "1\n" and not after.worker_restarted


# -- a hostile worker: raw frames on the protocol pipe ----------------------------------------


def _frame_bytes(payload: bytes) -> str:
    return f"send(raw={payload!r})\nimport time\ntime.sleep(30)"


HOSTILE = [
    ("oversized", "send(raw=b'', size=2_000_000_000)\nimport time\ntime.sleep(30)"),
    ("unknown_kind", "send({'op': 'result'}, kind=0)\nimport time\ntime.sleep(30)"),
    ("deep_json", _frame_bytes(b"[" * 200_000 + b"]" * 200_000)),
    ("deep_object", _frame_bytes(b'{"op":' + b"[" * 100_000 + b"]" * 100_000 + b"}")),
    ("not_an_object", _frame_bytes(b"[1, 2, 3]")),
    ("invalid_utf8", _frame_bytes(b'{"op": "result", "output": "\xff\xfe"}')),
    ("wrong_reply", "send({'op': 'value', 'ok': True, 'value': 'x'})\nimport time\ntime.sleep(30)"),
    ("huge_int", _frame_bytes(b'{"op": "result", "output_chars": ' + b"9" * 100_000 + b"}")),
]


@pytest.mark.parametrize("code", [c for _, c in HOSTILE], ids=[n for n, _ in HOSTILE])
def test_hostile_frames_become_an_error_result(code: str) -> None:
    async def scenario():
        async with await SandboxSession.start(
            DOC, config=CONFIG, _allow_unsafe_exec_for_tests=True
        ) as session:
            worker = os.pidfd_open(session.pid)
            result = await session._unsafe_exec_for_tests(FRAMES + code)
            # The hostile worker is stopped at once, not left to run out its sleep.
            assert wait_until(lambda: _exited(worker), timeout=10)
            os.close(worker)
            again = await session.run("print(len(doc))")
            return result, again

    result, again = asyncio.run(scenario())
    assert result.error and result.error.startswith("SandboxCrash:"), result.error
    assert "protocol" in result.error
    assert again.worker_restarted and again.output.endswith(f"{len(DOC)}\n")


def test_surrogate_escapes_from_a_hostile_worker_are_made_valid(unsafe_exec) -> None:
    code = "send({'op': 'llm', 'prompt': '\\ud800 q', 'text': 'x\\udfff'})\nprint(recv()['text'])"
    result, _ = unsafe_exec(DOC, FRAMES + code, config=CONFIG, llm=_echo_llm)
    assert result.error is None and result.output == "[3:2]\n"


def test_parent_enforces_llm_caps_a_hostile_worker_skips(unsafe_exec) -> None:
    # The worker's own llm() refuses these before sending; this worker sends them anyway.
    config = SandboxConfig(call_timeout_s=5.0, max_llm_calls_per_run=3, max_llm_request_chars=1000)
    calls: list[int] = []

    async def counting_llm(prompt: str, text: str) -> str:
        calls.append(len(text))
        return "ok"

    code = (
        "answers = []\n"
        "for size in [10, 5000, 10, 10, 10, 10]:\n"
        "    send({'op': 'llm', 'prompt': 'p', 'text': 'x' * size})\n"
        "    answers.append(recv())\n"
        "print(json.dumps([a.get('ok') for a in answers]))\n"
        "print(answers[1]['error'])\n"
        "print(answers[4]['error'])\n"
    )

    result, _ = unsafe_exec(DOC, FRAMES + code, config=config, llm=counting_llm)
    oks, size_error, count_error = result.output.splitlines()
    # Per run: the 4th request (3 allowed) and later ones are refused; oversized ones too.
    assert json.loads(oks) == [True, False, True, False, False, False]
    assert "limit is 1,000" in size_error
    assert "more than 3 times" in count_error
    assert calls == [10, 10]
    assert result.llm_calls == 6  # counted by the parent, not taken from the worker


def test_llm_cap_per_session_is_enforced_by_the_parent() -> None:
    config = SandboxConfig(call_timeout_s=5.0, max_llm_calls_per_session=2)

    async def scenario():
        async with await SandboxSession.start(DOC, config=config, llm=_echo_llm) as session:
            first = await session.run("print(llm('a', 'b'))")
            second = await session.run("print(llm('a', 'b'))\nprint(llm('a', 'b'))")
            return first, second

    first, second = asyncio.run(scenario())
    assert first.output == "[1:1]\n" and first.error is None
    assert second.output == "[1:1]\n"
    assert second.error and "already called 2 times in this session" in second.error


def test_frame_header_helper_matches_the_protocol() -> None:
    # The raw frames above are built by hand; keep them in step with the real framing.
    from fathom_rlm.sandbox import protocol

    frame = protocol.encode_json({"op": "x"})
    assert frame[:5] == struct.pack(">IB", len(frame) - 5, 74)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", "killed by signal SIGSEGV"),
        ("import os\nos._exit(7)", "exited with code 7"),
        ("import os\nos._exit(12)", "MemoryError: the sandbox worker ran out of memory"),
    ],
    ids=["signal", "exit-code", "out-of-memory-exit"],
)
def test_worker_death_is_reported_by_its_cause(code: str, expected: str) -> None:
    # The fork server reports how its child ended; the model reads the cause, here and in the
    # restart note of the next call.
    async def scenario():
        async with await SandboxSession.start(
            DOC, config=CONFIG, _allow_unsafe_exec_for_tests=True
        ) as session:
            result = await session._unsafe_exec_for_tests(code)
            again = await session.run("print(1)")
            return result, again

    result, again = asyncio.run(scenario())
    assert result.error and expected in result.error, result.error
    assert again.worker_restarted and again.output.endswith("1\n")


def test_a_worker_cannot_claim_it_touched_the_document() -> None:
    # The reward gives nothing to answers reached without touching the document; a compromised
    # worker's claim counts only for code that names `doc`.
    fake = "send({'op': 'result', 'output': 'fake', 'touched_document': True})\n"

    async def scenario():
        async with await SandboxSession.start(
            DOC, config=CONFIG, _allow_unsafe_exec_for_tests=True
        ) as session:
            lying = await session._unsafe_exec_for_tests(FRAMES + fake + "os._exit(0)")
            gone = await session.run("n = len(doc)")  # that worker has exited meanwhile
            honest = await session.run("n = len(doc)")
            return lying, gone, honest

    lying, gone, honest = asyncio.run(scenario())
    assert lying.output == "fake" and not lying.touched_document
    assert gone.error and gone.error.startswith("SandboxCrash:")
    assert honest.touched_document and honest.error is None
