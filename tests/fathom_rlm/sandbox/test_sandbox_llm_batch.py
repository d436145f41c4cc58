"""llm_batch() in the sandbox: answers in order, at most `max_llm_parallel` at once, each entry
under the same caps as one llm() call, a failed entry an error value that leaves the rest."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from fathom_rlm.sandbox import LLMRefused, SandboxConfig, SandboxSession

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
    assert answers[4].startswith("Error: prompt and text have 301 characters")
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
