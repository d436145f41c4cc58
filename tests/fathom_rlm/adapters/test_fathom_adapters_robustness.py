"""The adapters under stress, in-process on the main venv's verifiers: the rollout time budget on
the legacy API, and the slow work (documents, scoring) kept off the event loop's thread."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest
from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.documents import TaskRecord, build_split

from envtools.faults import FaultPlan
from envtools.policy_server import policy_server_in_thread

pytestmark = pytest.mark.xdist_group("test_fathom_adapters_robustness")

DOC_TOKENS = 16_000


@pytest.fixture(scope="module")
def row() -> TaskRecord:
    from fathom_lab.policies import register_tasks

    rows = build_split("eval", 1, doc_tokens=DOC_TOKENS)
    register_tasks(rows)
    return rows[0]


def legacy_rollout(url: str, row: TaskRecord, **arguments: Any) -> tuple[Any, Any]:
    """One legacy rollout through verifiers' own `rollout`, then the rubric's scores."""
    import openai
    from fathom_rlm.adapters.legacy import FathomLegacyEnv, FathomRubric
    from verifiers.legacy.clients.openai_chat_completions_client import (
        OpenAIChatCompletionsClient,
    )

    env = FathomLegacyEnv(FathomArguments(num_examples=1, doc_tokens=DOC_TOKENS, **arguments))
    rubric = next(r for r in env.rubric.rubrics if isinstance(r, FathomRubric))
    rollout_input = {
        "prompt": [{"role": "user", "content": row.question}],
        "example_id": 0,
        "answer": row.answer,
        "info": json.dumps(row.to_json()),
    }

    async def go() -> tuple[Any, Any]:
        api = openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0, timeout=120)
        try:
            client = OpenAIChatCompletionsClient(api)
            state = await env.rollout(rollout_input, client, "fathom-reference", {})
            return state, await rubric.scores(state)
        finally:
            await api.close()

    return asyncio.run(asyncio.wait_for(go(), 300))


def test_legacy_rollout_past_its_time_budget_ends_and_is_scored(row: TaskRecord) -> None:
    from fathom_rlm.adapters.legacy import RECORD_KEY

    slow = FaultPlan(slow=1.0, slow_s=60.0)  # every model call takes a minute
    with policy_server_in_thread(faults=slow) as url:
        state, scores = legacy_rollout(url, row, time_budget_s=1.0)
    assert state["stop_condition"] == "timeout_reached"
    assert state.get("error") is None  # a budget is an ending, not an error
    record = state[RECORD_KEY]
    assert record.ended_by == "time_budget" and record.final_answer is None
    assert scores["reward"] == 0.0 and scores["correctness"] == 0.0


def test_legacy_scores_and_documents_are_computed_off_the_loop_thread(
    row: TaskRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fathom_rlm.adapters import legacy
    from fathom_rlm.documents import inflight

    threads: dict[str, set[int]] = {"score": set(), "document": set()}
    real_score, real_load = legacy.score, inflight.get_document

    def spy_score(*args: Any) -> Any:
        threads["score"].add(threading.get_ident())
        return real_score(*args)

    def spy_load(*args: Any) -> Any:
        threads["document"].add(threading.get_ident())
        return real_load(*args)

    monkeypatch.setattr(legacy, "score", spy_score)
    monkeypatch.setattr(inflight, "get_document", spy_load)
    loop_threads: set[int] = set()

    original = asyncio.run

    def run(coro: Any) -> Any:
        async def main() -> Any:
            loop_threads.add(threading.get_ident())
            return await coro

        return original(main())

    monkeypatch.setattr(asyncio, "run", run)
    with policy_server_in_thread() as url:
        state, scores = legacy_rollout(url, row)
    assert scores["correctness"] == 1.0 and state.get("error") is None
    assert threads["score"] and threads["document"]
    assert not (threads["score"] | threads["document"]) & loop_threads


def test_concurrent_requests_for_one_document_generate_it_once() -> None:
    from fathom_rlm.documents import aget_document, get_document

    seed, doc_tokens = 987_654, 16_100  # a document no other test caches
    misses = get_document.cache_info().misses

    async def many() -> list[Any]:
        return list(await asyncio.gather(*(aget_document(seed, doc_tokens) for _ in range(8))))

    documents = asyncio.run(many())
    assert get_document.cache_info().misses == misses + 1
    assert len({id(d) for d in documents}) == 1 and len(documents[0].text) > 60_000


def test_v1_task_scores_off_the_loop_thread(
    row: TaskRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fathom_rlm.adapters import v1
    from fathom_rlm.agent import RolloutRecord

    seen: set[int] = set()
    real = v1.score

    def spy(*args: Any) -> Any:
        seen.add(threading.get_ident())
        return real(*args)

    monkeypatch.setattr(v1, "score", spy)
    arguments = FathomArguments(doc_tokens=DOC_TOKENS).as_dict()
    data = v1.FathomData(prompt=row.question, row=row.to_json(), arguments=arguments)
    task = v1.FathomTask(data, v1.FathomTasksetConfig().task)
    trace = type("Trace", (), {})()
    trace.state = v1.FathomState(record=RolloutRecord(ended_by="time_budget"))
    trace.messages = []

    async def both() -> tuple[float, dict[str, float]]:
        return await task.reward(trace), await task.fathom_signals(trace)

    reward, signals = asyncio.run(both())
    assert reward == 0.0 and signals["correctness"] == 0.0
    assert seen and threading.get_ident() not in seen


def test_legacy_rollout_cut_at_the_token_cap_ends_truncated_as_the_core_does(
    row: TaskRecord,
) -> None:
    """verifiers marks a reply with finish_reason "length" `is_truncated`; the adapter stops
    there, runs none of its (cut) tool calls and records the core's "truncated" ending."""
    from fathom_rlm.adapters.legacy import RECORD_KEY
    from fathom_rlm.agent.turns import TRUNCATED

    with policy_server_in_thread(faults=FaultPlan(cut=1.0)) as url:
        state, scores = legacy_rollout(url, row)
    assert state["is_truncated"] and state["stop_condition"] == "truncated"
    record = state[RECORD_KEY]
    assert record.ended_by == TRUNCATED and record.final_answer is None
    assert record.turns == 1 and record.total_tool_calls == 0
    assert scores["reward"] == 0.0 and scores["format_gate"] == 0.0


def test_endpoint_rollout_cut_at_the_token_cap_ends_truncated(row: TaskRecord) -> None:
    """The same cut reply through `fathom_lab.evaluate`'s OpenAI client and the core loop."""
    from fathom_lab.eval_runner import endpoint_contender, run_one
    from fathom_rlm.agent.turns import TRUNCATED

    with policy_server_in_thread(faults=FaultPlan(cut=1.0)) as url:
        contender = endpoint_contender("fathom-reference", url)

        async def go() -> dict[str, Any]:
            try:
                return await run_one(contender, 0, row)
            finally:
                assert contender.aclose is not None
                await contender.aclose()

        out = asyncio.run(go())
    assert out["error"] is None and out["ended_by"] == TRUNCATED
    assert out["scores"]["reward"] == 0.0 and out["summary"]["tool_calls"] == {}
