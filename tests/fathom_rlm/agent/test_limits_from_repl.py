"""Reward audit: code inside `repl` cannot lift a rollout's limits.

Every cap (depth, sub-call count, slice size, prompt size, a cell's time) is held by the parent
process, which treats the worker as compromised. Each attack runs for real: first as model code
in the RestrictedPython sandbox (reaching for the tools' internals, re-entering a tool, forging
a depth, nesting `llm` in `llm`, looping past the sub-call budget), then as a fully compromised
worker (plain Python inside the OS sandbox) that writes raw `llm` and `llm_batch` frames with any
fields it likes; and a batch racing the sub-call budget. None of them raises a count above its
cap. docs/reward_audit.md lists them.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest
from fathom_rlm.agent import ChatReply, RolloutCaps, RolloutRecord, run_rollout
from fathom_rlm.sandbox import SandboxConfig, SandboxSession
from worker_frames import FRAMES

pytestmark = [pytest.mark.reward_audit, pytest.mark.xdist_group("test_limits_from_repl")]

DOCUMENT = "Orin Vale lived in Denhan and kept the Vess Lantern. " * 800  # 42,400 characters
CAPS = RolloutCaps(
    max_sub_calls=3,
    max_depth=2,
    max_slice_chars=1_000,
    max_prompt_chars=200,
    sandbox=SandboxConfig(call_timeout_s=5.0, kill_grace_s=1.0),
)


def repl(code: str) -> dict[str, Any]:
    arguments = json.dumps({"code": code})
    call = {"id": "c", "type": "function", "function": {"name": "repl", "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class Chat:
    """The root answers with `root` replies in turn; every sub-call's model (a depth-1 agent or
    a plain reader) replies with `sub` replies in turn, then answers "x"."""

    def __init__(self, root: list[dict[str, Any]], sub: list[dict[str, Any]] = ()) -> None:
        self.root, self.sub = list(root), list(sub)
        self.tools_offered: list[list[str]] = []

    async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        self.tools_offered.append([t["function"]["name"] for t in tools or ()])
        is_root = messages[0]["content"].startswith("You answer a question about a long")
        queue = self.root if is_root else self.sub
        reply = queue.pop(0) if queue else {"role": "assistant", "content": "<answer>x</answer>"}
        return ChatReply(reply)


def run(chat: Chat, caps: RolloutCaps = CAPS) -> tuple[RolloutRecord, list[dict[str, Any]]]:
    transcript: list[dict[str, Any]] = []
    record = asyncio.run(
        run_rollout(DOCUMENT, "Where did Orin Vale live?", chat, caps, transcript=transcript)
    )
    return record, [m["content"] for m in transcript if m["role"] == "tool"]


def assert_within_caps(record: RolloutRecord, caps: RolloutCaps = CAPS) -> None:
    assert record.llm_calls <= caps.max_sub_calls
    assert record.depth_reached <= caps.max_depth
    for sub in record.sub_calls:
        assert 1 <= sub.depth <= caps.max_depth
        assert sub.kind == ("plain" if sub.depth == caps.max_depth else "rlm")
        assert sub.slice_chars <= caps.max_slice_chars
        assert sub.prompt_chars <= caps.max_prompt_chars


@pytest.mark.parametrize(
    "code",
    [
        "print(llm.__self__)",
        "print(getattr(llm, '__self__'))",
        "print(llm.__globals__)",
        "print(type(llm).__dict__)",
        "print(vars(llm))",
        "print(llm.__func__.__code__)",
        "print(__builtins__['llm'].__self__)",
        "import sys\nprint(sys.modules)",
    ],
)
def test_the_tools_internals_are_out_of_reach(code: str) -> None:
    record, outputs = run(Chat([repl(code)]))
    assert outputs[0].startswith("Error:") or "Error" in outputs[0], outputs[0]
    assert "Worker" not in outputs[0] and "RolloutTools" not in outputs[0]
    assert record.llm_calls == 0
    assert_within_caps(record)


def test_a_tool_call_written_from_inside_repl_is_only_text() -> None:
    forged = json.dumps({"name": "llm", "arguments": {"prompt": "q", "slice": "0:40000"}})
    code = f"print({forged!r})\nprint(repl('print(1)'))"
    record, outputs = run(Chat([repl(code)]))
    assert forged in outputs[0] and "NameError" in outputs[0]
    assert record.tool_calls == {"repl": 1} and record.llm_calls == 0


@pytest.mark.parametrize(
    "code",
    [
        "print(llm('Where?', doc[:100], depth=0))",
        "print(llm('Where?', doc[:100], 0))",
        "depth = 0\nmax_depth = 99\nmax_sub_calls = 99\nprint(llm('Where?', doc[:100]))",
    ],
)
def test_a_forged_depth_or_budget_changes_nothing(code: str) -> None:
    record, _ = run(Chat([repl(code)]))
    assert_within_caps(record)
    assert all(sub.depth == 1 for sub in record.sub_calls)


def test_llm_nested_in_llm_stays_one_level_deep() -> None:
    code = "print(llm('Where?', llm('Where?', doc[:100])))"
    record, outputs = run(Chat([repl(code)]))
    assert [s.depth for s in record.sub_calls] == [1, 1]  # the inner answer is only text
    assert outputs[0] == "x"
    assert_within_caps(record)


def test_sub_agents_cannot_recurse_past_the_depth_cap() -> None:
    # The depth-1 agent asks a depth-2 reader, which is offered no tool; the reader replies with
    # a tool call anyway, which is not run.
    to_agent = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "a",
                "type": "function",
                "function": {
                    "name": "llm",
                    "arguments": json.dumps({"prompt": "q", "slice": "0:500"}),
                },
            }
        ],
    }
    code_in_agent = "print(llm('q', doc[:100]))"
    reader_calls_llm = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "r", "function": {"name": "llm", "arguments": "{}"}}],
    }
    chat = Chat([to_agent], sub=[repl(code_in_agent), reader_calls_llm])
    record, _ = run(chat)
    assert [(s.depth, s.kind) for s in record.sub_calls] == [(1, "rlm"), (2, "plain")]
    assert [] in chat.tools_offered  # the reader's call had no tools
    assert_within_caps(record)


def test_a_loop_of_llm_calls_stops_at_the_sub_call_budget() -> None:
    code = (
        "answers = []\n"
        "for i in range(40):\n"
        "    try:\n"
        "        answers.append(llm('Where?', doc[i * 10:i * 10 + 50]))\n"
        "    except LLMError as exc:\n"
        "        answers.append('refused: ' + str(exc)[:60])\n"
        "print(len([a for a in answers if a == 'x']), answers[-1])"
    )
    record, outputs = run(Chat([repl(code), repl(code)]))
    assert record.llm_calls == CAPS.max_sub_calls
    assert outputs[0].startswith(f"{CAPS.max_sub_calls} refused")
    assert outputs[1].startswith("0 refused")  # the next cell gets no fresh budget
    assert_within_caps(record)


def test_a_batch_racing_the_sub_call_budget_gets_no_more_than_it() -> None:
    # Every entry is in flight at once; the budget is still spent one entry at a time.
    code = "print(to_json(llm_batch([('Where?', doc[i * 10:i * 10 + 50]) for i in range(40)])))"
    caps = replace(CAPS, max_parallel_sub_calls=40)
    record, outputs = run(Chat([repl(code), repl(code)]), caps)
    first, second = json.loads(outputs[0]), json.loads(outputs[1])
    assert first[: CAPS.max_sub_calls] == ["x"] * CAPS.max_sub_calls
    assert all(a.startswith("Error: ") for a in first[CAPS.max_sub_calls :] + second)
    assert any("sub-call budget is used up" in a for a in second)  # no fresh budget
    assert record.llm_calls == CAPS.max_sub_calls
    assert_within_caps(record, caps)


def llm_over(slices: list[str]) -> dict[str, Any]:
    arguments = json.dumps({"prompt": "Where?", "slice": slices})
    call = {"id": "c", "type": "function", "function": {"name": "llm", "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def test_the_llm_tool_over_a_list_meets_the_same_caps() -> None:
    chat = Chat([llm_over(["0:50", "0:5000", "50:100"]), llm_over(["100:150", "150:200"])])
    record, outputs = run(chat)
    first, second = json.loads(outputs[0]), json.loads(outputs[1])
    assert first[0] == first[2] == "x" and "limit is 1,000" in first[1]  # refused alone
    assert second[0] == "x" and "sub-call budget is used up" in second[1]
    assert record.llm_calls == CAPS.max_sub_calls
    assert_within_caps(record)


def test_no_sub_call_of_a_list_outlives_a_failed_model_call() -> None:
    finished: list[int] = []

    class Failing(Chat):
        calls = 0

        async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> ChatReply:
            if messages[0]["content"].startswith("You answer a question about a long"):
                return await super().__call__(messages, tools)
            Failing.calls += 1
            if Failing.calls == 2:
                raise ConnectionError("the endpoint went away")
            await asyncio.sleep(0.3)
            finished.append(Failing.calls)
            return ChatReply({"role": "assistant", "content": "<answer>x</answer>"})

    async def rollout_then_wait() -> tuple[int, int]:
        caps = replace(CAPS, max_sub_calls=5, max_depth=1)
        chat = Failing([llm_over(["0:50", "50:100", "100:150", "150:200"])])
        with pytest.raises(ConnectionError):
            await run_rollout(DOCUMENT, "Where did Orin Vale live?", chat, caps)
        at_failure = len(finished)
        await asyncio.sleep(0.6)  # a sibling left running would finish now
        return at_failure, len(finished)

    at_failure, later = asyncio.run(rollout_then_wait())
    assert later == at_failure == 0  # the siblings were stopped, neither left running nor awaited


@pytest.mark.parametrize(
    ("code", "refusal"),
    [
        ("print(llm('Where?', doc))", "limit is 1,000"),
        ("print(llm('Where?', doc[:900] + doc[:900]))", "limit is 1,000"),
        ("print(llm('q' * 500, doc[:100]))", "prompt must be 1 to 200"),
    ],
)
def test_oversize_slices_and_prompts_from_code_are_refused(code: str, refusal: str) -> None:
    record, outputs = run(Chat([repl(code)]))
    assert refusal in outputs[0] and record.llm_calls == 0


def test_a_cell_that_never_ends_is_stopped_and_the_rollout_goes_on() -> None:
    record, outputs = run(Chat([repl("while True:\n    pass"), repl("print(len(doc))")]))
    assert "timed out" in outputs[0] or "TimeoutError" in outputs[0]
    assert outputs[1] == str(len(DOCUMENT))
    assert record.ended_by == "answer"


# ------------------------------------------------------------------- a compromised worker


@pytest.fixture
def compromised(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every REPL worker of the rollout runs plain Python (still inside the OS sandbox): it can
    write any frame to the parent, as a worker whose language sandbox fell would."""
    start = SandboxSession.start.__func__  # type: ignore[attr-defined]

    async def start_unsafe(cls: type, *args: Any, **kwargs: Any) -> SandboxSession:
        return await start(cls, *args, **kwargs, _allow_unsafe_exec_for_tests=True)

    async def run_unsafe(self: SandboxSession, code: str) -> Any:
        return await self._unsafe_exec_for_tests(FRAMES + code)

    monkeypatch.setattr(SandboxSession, "start", classmethod(start_unsafe))
    monkeypatch.setattr(SandboxSession, "run", run_unsafe)


def send_all(frames: str) -> str:
    """Worker code that sends each frame of the list `frames` (Python source) as an llm()
    request and prints which were answered."""
    return (
        f"answered = []\nfor frame in {frames}:\n"
        "    send({'op': 'llm', **frame})\n"
        "    answered.append(recv().get('ok'))\n"
        "print(answered)"
    )


def test_raw_frames_from_a_compromised_worker_meet_the_same_caps(compromised: None) -> None:
    forged = (
        "[{'prompt': 'q', 'text': 'x' * 50, 'depth': -3},"
        " {'prompt': 'q', 'text': 'x' * 50, 'max_sub_calls': 999, 'max_depth': 99},"
        " {'prompt': 'q', 'text': doc[:5000]},"  # a slice over the cap
        " {'prompt': 'q' * 300, 'text': 'x' * 50}]"  # a prompt over the cap
    )
    flood = "[{'prompt': 'q', 'text': 'y' * 50}] * 30"
    record, outputs = run(Chat([repl(send_all(forged)), repl(send_all(flood))]))
    # The forged fields are ignored: those requests are answered as plain ones from depth 0
    # and spend the budget like any other. Both oversize ones are refused. Of the flood in the
    # next cell, only what is left of the rollout's budget is answered.
    assert outputs[0] == "[True, True, False, False]"
    assert json.loads(outputs[1].lower()).count(True) == CAPS.max_sub_calls - 2
    assert record.llm_calls == CAPS.max_sub_calls
    assert all(sub.depth == 1 for sub in record.sub_calls)
    assert_within_caps(record)


def test_a_raw_batch_frame_meets_the_same_caps(compromised: None) -> None:
    # Forged fields on a batch are ignored, oversize entries refused one by one, and only the
    # rollout's budget is answered; a batch longer than one run's llm() budget is no request an
    # honest worker sends: the worker is stopped.
    forged = (
        "send({'op': 'llm_batch', 'depth': -3, 'max_sub_calls': 999, 'requests': "
        "[['q', 'x' * 50], ['q', doc[:5000]], ['q' * 300, 'x']]})\n"
        "print([r.get('ok') for r in recv()['results']])"
    )
    more = (
        "send({'op': 'llm_batch', 'requests': [['q', 'y']] * 3})\n"
        "print([r.get('ok') for r in recv()['results']])"
    )
    flood = "send({'op': 'llm_batch', 'requests': [['q', 'x']] * 100000})\nprint(recv())"
    record, outputs = run(Chat([repl(forged), repl(more), repl(flood)]))
    assert outputs[0] == "[True, False, False]"
    assert outputs[1] == "[True, True, False]"
    assert "broke the sandbox protocol" in outputs[2]
    assert record.llm_calls == CAPS.max_sub_calls
    assert all(sub.depth == 1 for sub in record.sub_calls)
    assert_within_caps(record)
