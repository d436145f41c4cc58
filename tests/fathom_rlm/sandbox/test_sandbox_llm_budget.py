"""llm() cannot stretch a call past its wall clock; start-up failures and kills leak nothing."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from fathom_rlm.sandbox import LLMRefused, SandboxConfig, SandboxError, SandboxSession
from fathom_rlm.sandbox import session as session_module
from fathom_rlm.sandbox.readonly import CELL

from .conftest import sandbox_pids, wait_until

DOC = "Velmora Quessit met Oradin Tal in Brevik. " * 100
LIMIT = 0.5
GRACE = 0.3
CONFIG = SandboxConfig(call_timeout_s=LIMIT, kill_grace_s=GRACE)

LOOP_CATCHING = (
    "while True:\n"
    "    try:\n"
    "        llm('q', 'x')\n"
    "    except LLMError:\n"
    "        pass\n"
    "    except TimeoutError:\n"
    "        pass\n"
)
LOOP_SWALLOWING = "while True:\n    try:\n        llm('q', 'x')\n    except:\n        pass\n"


def _count_rpcs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count every llm() request that reaches the parent."""
    seen = [0]
    original = SandboxSession._answer_llm

    async def counting(self: SandboxSession, message: dict) -> tuple[dict, bool]:
        seen[0] += 1
        return await original(self, message)

    monkeypatch.setattr(SandboxSession, "_answer_llm", counting)
    return seen


async def _refuse(prompt: str, text: str) -> str:
    raise LLMRefused("the sub-call budget is used up")


async def _latencies_while(task: asyncio.Task, other: SandboxSession) -> list[float]:
    latencies = []
    while not task.done():
        mark = time.perf_counter()
        result = await other.run("print(len(doc))")
        latencies.append(time.perf_counter() - mark)
        assert result.output == f"{len(DOC)}\n"
        await asyncio.sleep(0.02)
    return latencies


@pytest.mark.parametrize("code", [LOOP_CATCHING, LOOP_SWALLOWING], ids=["catching", "bare"])
@pytest.mark.parametrize("llm", [_refuse, None], ids=["callback-refuses", "no-callback"])
@pytest.mark.parametrize("cap", [32, 10**9], ids=["capped", "uncapped"])
def test_refused_llm_loop_is_bounded(
    monkeypatch: pytest.MonkeyPatch, code: str, llm, cap: int
) -> None:
    rpcs = _count_rpcs(monkeypatch)
    config = SandboxConfig(call_timeout_s=LIMIT, kill_grace_s=GRACE, max_llm_calls_per_run=cap)

    async def scenario():
        async with (
            await SandboxSession.start(DOC, config=config, llm=llm) as attacker,
            await SandboxSession.start(DOC, config=CONFIG) as other,
        ):
            task = asyncio.ensure_future(attacker.run(code))
            latencies = await _latencies_while(task, other)
            result = await task
            after = await attacker.run("print('alive')")
            return result, latencies, after

    result, latencies, after = asyncio.run(scenario())
    # The cell's own deadline ended it: refusals did not stretch its clock.
    assert result.timed_out, result
    # Uncapped, refusals still count against the clock; capped, few requests are ever sent.
    if cap == 32:
        assert rpcs[0] <= 32
    # The other session kept answering during the attack (a blocked one answers once, after it).
    assert len(latencies) >= 3, latencies
    assert after.output.endswith("alive\n") and after.error is None


def test_llm_cap_per_run_is_reported_and_resets(monkeypatch: pytest.MonkeyPatch) -> None:
    rpcs = _count_rpcs(monkeypatch)

    async def echo(prompt: str, text: str) -> str:
        return "ok"

    code = (
        "answers, errors = [], []\n"
        "for i in range(5):\n"
        "    try:\n"
        "        answers.append(llm('q', 'x'))\n"
        "    except LLMError as e:\n"
        "        errors.append(str(e))\n"
        "print(len(answers), len(errors), errors[0])"
    )
    config = SandboxConfig(call_timeout_s=LIMIT, kill_grace_s=GRACE, max_llm_calls_per_run=3)

    async def scenario():
        async with await SandboxSession.start(DOC, config=config, llm=echo) as box:
            return await box.run(code), await box.run(code)

    first, second = asyncio.run(scenario())
    for result in (first, second):
        assert result.error is None and result.llm_calls == 3
        assert result.output.startswith("3 2 ") and "more than 3 times" in result.output
    assert rpcs[0] == 6


def test_real_llm_wait_is_excluded_but_a_slow_refusal_is_charged() -> None:
    async def slow_refusal(prompt: str, text: str) -> str:
        await asyncio.sleep(LIMIT + GRACE + 0.3)
        raise LLMRefused("no")

    async def scenario():
        async with await SandboxSession.start(DOC, config=CONFIG, llm=slow_refusal) as box:
            return await box.run("llm('q', 'x')")

    result = asyncio.run(scenario())
    assert result.timed_out and "LLMError" not in (result.error or "")


def test_llm_error_text_is_not_passed_through() -> None:
    async def failing(prompt: str, text: str) -> str:
        raise RuntimeError("POST http://10.1.2.3:8000/intercept/abc failed")

    async def refusing(prompt: str, text: str) -> str:
        raise LLMRefused("llm() prompt must be 1 to 2,000 characters.")

    code = "try:\n    llm('q', 'x')\nexcept LLMError as e:\n    print(e)"

    async def scenario():
        outputs = []
        for llm in (failing, refusing):
            async with await SandboxSession.start(DOC, config=CONFIG, llm=llm) as box:
                outputs.append((await box.run(code)).output)
        return outputs

    generic, refusal = asyncio.run(scenario())
    assert generic == "llm() failed: RuntimeError\n"
    assert refusal == "llm() prompt must be 1 to 2,000 characters.\n"


def test_worker_is_killed_without_a_pidfd(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pidfd(pid: int, flags: int = 0) -> int:
        raise OSError("pidfd_open unavailable")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    before = sandbox_pids()

    async def scenario():
        box = await SandboxSession.start(DOC, config=CONFIG)
        assert box._handle.pidfd is None
        first_pid = box.pid
        # Runs in C without checking signals: only a kill ends it.
        spun = await box.run("sum(range(10**12))")
        assert first_pid is not None
        # Gone from its fork server's children: killed and reaped (no /proc scan of others).
        assert wait_until(lambda: first_pid not in sandbox_pids())
        again = await box.run("print(1)")
        second_pid = box.pid
        await box.close()
        return spun, again, second_pid

    spun, again, second_pid = asyncio.run(scenario())
    assert spun.timed_out and "restarted" in (spun.error or "")
    assert again.worker_restarted and again.output.endswith("1\n")
    assert wait_until(lambda: second_pid not in sandbox_pids())
    assert wait_until(lambda: not (sandbox_pids() - before))


def _fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("failure", ["read_pipe", "write_pipe", "spawn"])
def test_failed_start_closes_the_pipes(monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    def broken(*args, **kwargs):
        raise OSError("simulated failure")

    async def broken_async(*args, **kwargs):
        raise OSError("simulated failure")

    async def attempt() -> None:
        with pytest.raises((OSError, SandboxError)):
            await SandboxSession.start(DOC, config=CONFIG)

    async def scenario() -> tuple[int, int]:
        await (await SandboxSession.start(DOC, config=CONFIG)).close()  # warm: server, loop
        before = _fd_count()
        with monkeypatch.context() as patch:
            if failure == "spawn":
                patch.setattr(session_module.ForkServer, "spawn", broken)
                patch.setattr(session_module, "fork_server", lambda *a: broken())
            else:
                loop_type = type(asyncio.get_running_loop())
                patch.setattr(loop_type, f"connect_{failure}", broken_async)
            for _ in range(5):
                await attempt()
        await asyncio.sleep(0.05)
        return before, _fd_count()

    before, after = asyncio.run(scenario())
    assert after <= before, (before, after)
    assert not session_module.WORKDIRS


@pytest.mark.parametrize(
    "cell",
    [
        "doc[" + " " * 990 + "!",
        "print(doc[" + " \t" * 490 + "!",
        "doc[:" + " " * 990 + "!",
        "doc[1:2]" + " " * 990 + "!",
        "\n" * 990 + "!",
    ],
)
def test_read_only_pattern_fails_fast(cell: str) -> None:
    CELL.fullmatch(cell)  # warm
    times = []
    for _ in range(5):
        mark = time.perf_counter()
        assert CELL.fullmatch(cell) is None
        times.append(time.perf_counter() - mark)
    assert min(times) < 0.001, times
