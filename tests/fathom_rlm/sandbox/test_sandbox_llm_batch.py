"""llm_batch() in the sandbox: answers in order, at most `max_llm_parallel` at once, each entry
under the same caps as one llm() call, a failed entry an error value that leaves the rest."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from fathom_rlm.sandbox import LLMRefused, SandboxConfig, SandboxSession
from worker_frames import FRAMES

DOC = "Velmora Quessit met Oradin Tal in Brevik. " * 100
DELAY = 0.2


class Endpoint:
    """An llm callback that takes DELAY per answer and records how many ran at once."""

    def __init__(self) -> None:
        self.running = self.most = self.calls = 0

    async def __call__(self, prompt: str, text: str) -> str:
        self.calls += 1
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(DELAY)
            if prompt == "fail":
                raise RuntimeError("the endpoint broke")
            if prompt == "refuse":
                raise LLMRefused("the sub-call budget is used up")
            return f"{prompt}:{len(text)}"
        finally:
            self.running -= 1


async def _run(code: str, config: SandboxConfig, endpoint: Endpoint) -> tuple[list, float]:
    session = await SandboxSession.start(DOC, config=config, llm=endpoint)
    try:
        started = time.perf_counter()
        result = await session.run(code)
        wall = time.perf_counter() - started
    finally:
        await session.close()
    assert result.error is None, result.error
    return json.loads(result.output), wall


def test_answers_come_back_in_order_at_most_parallel_at_once() -> None:
    endpoint = Endpoint()
    config = SandboxConfig(max_llm_parallel=3, call_timeout_s=2.0)
    code = "print(to_json(llm_batch([(str(i), doc[:i + 1]) for i in range(9)])))"
    answers, wall = asyncio.run(_run(code, config, endpoint))
    assert answers == [f"{i}:{i + 1}" for i in range(9)]
    assert endpoint.most == 3 and endpoint.calls == 9
    # Three waves of DELAY, not nine: the batch ran concurrently.
    assert wall < 9 * DELAY


def test_a_failed_or_refused_entry_is_an_error_value_and_the_batch_goes_on() -> None:
    endpoint = Endpoint()
    code = (
        "print(to_json(llm_batch([('a', 'x'), ('fail', 'x'), ('refuse', 'x'), ('b', 'xy'), "
        "('c', 'z' * 300)])))"
    )
    config = SandboxConfig(max_llm_request_chars=200)
    answers, _ = asyncio.run(_run(code, config, endpoint))
    assert answers[0] == "a:1" and answers[3] == "b:2"
    assert answers[1] == "Error: llm() failed: RuntimeError"
    assert answers[2] == "Error: the sub-call budget is used up"
    assert answers[4].startswith("Error: llm() prompt and text have 301 characters")
    assert endpoint.calls == 4  # the oversize entry was never sent


def test_entries_past_the_runs_budget_are_not_sent() -> None:
    endpoint = Endpoint()
    config = SandboxConfig(max_llm_calls_per_run=4, max_llm_parallel=8)
    code = "llm('first', 'x')\nprint(to_json(llm_batch([(str(i), 'x') for i in range(6)])))"
    answers, _ = asyncio.run(_run(code, config, endpoint))
    assert answers[:3] == ["0:1", "1:1", "2:1"]
    assert all(a.startswith("Error: llm() was called more than 4 times") for a in answers[3:])
    assert endpoint.calls == 4


def test_a_batch_over_its_character_cap_sends_what_fits() -> None:
    endpoint = Endpoint()
    config = SandboxConfig(max_llm_batch_chars=250)
    code = "print(to_json(llm_batch([('p', 'x' * 99) for i in range(4)])))"
    answers, _ = asyncio.run(_run(code, config, endpoint))
    assert answers[:2] == ["p:99", "p:99"]
    assert all(a.startswith("Error: the batch is over 250 characters") for a in answers[2:])


@pytest.mark.parametrize(
    "argument", ["'not a list'", "[('only one',)]", "[(1, 'x')]", "[['p', 'x', 'extra']]"]
)
def test_a_malformed_batch_raises_a_type_error(argument: str) -> None:
    async def run() -> str | None:
        session = await SandboxSession.start(DOC, llm=Endpoint())
        try:
            return (await session.run(f"llm_batch({argument})")).error
        finally:
            await session.close()

    error = asyncio.run(run())
    assert error is not None and "TypeError: llm_batch() takes a list of (prompt, text)" in error


# ------------------------------------------------------------------- a compromised worker


async def _unsafe(code: str, config: SandboxConfig, endpoint: Any) -> Any:
    session = await SandboxSession.start(
        DOC, config=config, llm=endpoint, _allow_unsafe_exec_for_tests=True
    )
    try:
        return await session._unsafe_exec_for_tests(FRAMES + code)
    finally:
        await session.close()


def test_a_worker_streaming_batches_without_reading_is_stopped_on_time() -> None:
    # A read from a full buffer never waits, so only an explicit check of the call's budget (and
    # the rule that an answer is read before the next request) ends this cell.
    flood = (
        "import signal, time\n"
        "signal.setitimer(signal.ITIMER_REAL, 0)\n"
        "body = json.dumps({'op': 'llm_batch', 'requests': [['q', 'x']]}).encode()\n"
        "chunk = (struct.pack('>IB', len(body), 74) + body) * 64\n"
        "t = time.perf_counter()\n"
        "while time.perf_counter() - t < 10:\n"
        "    os.write(1, chunk)\n"
        "print('done')"
    )

    async def instant(prompt: str, text: str) -> str:
        return "a"

    config = SandboxConfig(call_timeout_s=1.0, kill_grace_s=0.5)
    result = asyncio.run(_unsafe(flood, config, instant))
    assert result.wall_s < 3.0, result.wall_s  # 1.5 s of budget, not the worker's 10 s
    assert result.output != "done\n" and (result.timed_out or "protocol" in (result.error or ""))


def test_the_parent_holds_the_batch_character_cap_and_cleans_the_text() -> None:
    seen: list[tuple[str, str]] = []

    async def endpoint(prompt: str, text: str) -> str:
        seen.append((prompt, text))
        return "a"

    forged = (
        "send({'op': 'llm_batch', 'requests': [['q\\ud800', 'x' * 1000]] * 3})\n"
        "print([r.get('ok') for r in recv()['results']])"
    )
    result = asyncio.run(_unsafe(forged, SandboxConfig(max_llm_batch_chars=2_500), endpoint))
    assert result.output.strip() == "[True, True, False]"
    assert seen[0][0] == "q\ufffd"  # a lone surrogate never reaches the model
