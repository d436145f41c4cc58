"""The agent loop with the real sandbox: tool errors, depth and token accounting, cleanup."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fathom_rlm.agent import (
    ChatReply,
    RolloutCaps,
    RolloutRecord,
    RolloutTools,
    prompts,
    run_rollout,
)
from fathom_rlm.sandbox import SandboxConfig, SandboxSession

DOCUMENT = (
    "Chapter 1: Rain\n\nOrin Vale lived in Denhan. "
    + "Filler text about the weather. " * 500
    + "Chapter 2: Salt\n\nThe Vess Lantern was catalogued as QX-1234. "
    + "More filler. " * 800
)


def call(name: str, arguments: Any, call_id: str = "c") -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def tools_msg(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": f"<answer>{text}</answer>"}


class Script:
    """A ChatFn that replies from a queue and remembers every request it was sent."""

    def __init__(self, *replies: dict[str, Any], usage: dict[str, int] | None = None) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = []
        self.usage = usage

    async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        self.requests.append((messages, tools))
        reply = self.replies.pop(0) if self.replies else answer("fallback")
        return ChatReply(reply, dict(self.usage) if self.usage else None)

    def role(self, i: int) -> str:
        system = self.requests[i][0][0]["content"]
        for name, line in (
            ("root", prompts.ROOT_ROLE),
            ("sub", prompts.SUB_ROLE),
            ("reader", prompts.READER_ROLE),
        ):
            if system.startswith(line):
                return name
        return "?"


def rollout(script: Script, caps: RolloutCaps | None = None, transcript: list | None = None):
    return asyncio.run(
        run_rollout(DOCUMENT, "Where did Orin Vale live?", script, caps, transcript=transcript)
    )


def tool_outputs(transcript: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in transcript if m["role"] == "tool"]


def test_system_prompt_gives_size_not_content() -> None:
    script = Script(answer("Denhan"))
    rollout(script)
    system = script.requests[0][0][0]["content"]
    assert f"{len(DOCUMENT):,} characters" in system
    assert "Orin Vale" not in system and "Denhan" not in system
    assert [t["function"]["name"] for t in script.requests[0][1]] == ["repl", "llm"]


@pytest.mark.parametrize(
    ("bad_call", "message"),
    [
        (call("grep", {"pattern": "x"}), "unknown tool 'grep'"),
        (call("repl", "{not json"), "not valid JSON"),
        (call("repl", "[1, 2]"), "must be a JSON object"),
        (call("repl", {}), "missing code"),
        (call("repl", {"code": 5}), "must be a string"),
        (call("repl", {"code": "print(1)", "x": 1}), "unexpected arguments x"),
        (call("repl", {"code": "#" * 9_000}), "the limit is 8,000"),
        (call("repl", "x" * 20_000), "too long"),
        (call("llm", {"prompt": "q"}), "missing slice"),
        (call("llm", {"prompt": "q", "slice": 7}), "must be a string"),
        (call("llm", {"prompt": "q", "slice": "0:20000"}), "the limit is 12,000"),
        (call("llm", {"prompt": "q", "slice": "50:50"}), "empty"),
        (call("llm", {"prompt": "q", "slice": "0:99999999"}), "ends past the text"),
        (call("llm", {"prompt": "q", "slice": "no_such_var"}), "no REPL variable"),
        (call("llm", {"prompt": "q", "slice": "doc[0:10]"}), 'range "start:end"'),
        (call("llm", {"prompt": "q" * 3_000, "slice": "0:10"}), "prompt is 3,000"),
        ({"id": "x", "type": "function"}, "unknown tool (no name)"),
    ],
)
def test_every_tool_error_is_a_message_and_the_rollout_goes_on(
    bad_call: dict[str, Any], message: str
) -> None:
    script = Script(tools_msg(bad_call), answer("Denhan"))
    transcript: list = []
    record = rollout(script, transcript=transcript)
    (output,) = tool_outputs(transcript)
    assert output.startswith("Error:") and message in output, output
    assert record.tool_errors == 1 and record.ended_by == "answer"
    assert record.final_answer == "Denhan" and record.sub_calls == []


def test_variable_errors_and_sub_call_budget() -> None:
    caps = RolloutCaps(max_sub_calls=1, max_depth=1)
    script = Script(
        tools_msg(
            call("repl", {"code": "n = 5\nbig = 'x' * 20000\nblank = '   '"}, "a"),
            call("llm", {"prompt": "q", "slice": "n"}, "b"),
            call("llm", {"prompt": "q", "slice": "big"}, "c"),
            call("llm", {"prompt": "q", "slice": "blank"}, "d"),
            call("llm", {"prompt": "q", "slice": "0:100"}, "e"),
        ),
        answer("read it"),  # the plain sub-call at depth 1 = max_depth
        tools_msg(call("llm", {"prompt": "q", "slice": "0:100"})),
        answer("Denhan"),
    )
    transcript: list = []
    record = rollout(script, caps, transcript)
    outputs = tool_outputs(transcript)
    assert "(no output" in outputs[0]
    assert "not text" in outputs[1] or "not a str" in outputs[1]
    assert "20,000 characters" in outputs[2]
    assert "empty" in outputs[3]
    assert outputs[4] == "read it"
    assert "sub-call budget is used up" in outputs[5]
    assert record.llm_calls == 1 and record.tool_errors == 4


def test_timeout_and_per_turn_cap_and_turn_budget() -> None:
    caps = RolloutCaps(
        max_turns=2, max_tool_calls_per_turn=1, sandbox=SandboxConfig(call_timeout_s=0.5)
    )
    script = Script(
        tools_msg(
            call("repl", {"code": "while True:\n    pass"}, "a"),
            call("repl", {"code": "print(1)"}, "b"),
        ),
        tools_msg(call("repl", {"code": "print(len(doc))"})),
        answer("never asked"),
    )
    transcript: list = []
    record = rollout(script, caps, transcript)
    outputs = tool_outputs(transcript)
    assert "Timeout" in outputs[0] or "timed out" in outputs[0]
    assert "at most 1 tool calls per reply" in outputs[1]
    assert outputs[2] == str(len(DOCUMENT))
    assert record.ended_by == "max_turns" and record.final_message is None
    assert record.final_answer is None and record.turns == 2
    assert record.touched_document


def test_depth_accounting_with_nested_sub_calls() -> None:
    script = Script(
        # root: llm on a range -> depth-1 sub-agent
        tools_msg(call("llm", {"prompt": "Where?", "slice": "0:200"})),
        # depth 1 (tools): llm() from REPL code -> depth-2 plain reader, then the llm tool
        tools_msg(call("repl", {"code": "print(llm('Where?', doc[0:60]))"})),
        answer("Denhan (depth 2, from REPL)"),
        tools_msg(call("llm", {"prompt": "Where?", "slice": "10:80"})),
        answer("Denhan (depth 2, tool)"),
        answer("Denhan"),  # depth 1 answers
        answer("Denhan"),  # root answers
    )
    transcript: list = []
    record = rollout(script, None, transcript)
    roles = [script.role(i) for i in range(len(script.requests))]
    assert roles == ["root", "sub", "reader", "sub", "reader", "sub", "root"]
    # The sub-agent at depth 1 is offered both tools; the plain reader none.
    assert [t["function"]["name"] for t in script.requests[1][1]] == ["repl", "llm"]
    assert script.requests[2][1] is None
    assert [(s.depth, s.kind, s.origin, s.slice_source) for s in record.sub_calls] == [
        (1, "rlm", "tool", "range"),
        (2, "plain", "repl", "repl"),
        (2, "plain", "tool", "range"),
    ]
    assert record.depth_used == 2 and record.llm_calls == 3
    # Only the plain readers read text: a range inside a sub-agent's slice maps back to document
    # offsets, REPL text is kept as text; the depth-1 agent's own slice was never read.
    assert record.shown_ranges == [(10, 80)]
    assert DOCUMENT[0:60] in record.shown_texts
    assert [s.read_chars for s in record.sub_calls] == [0, 60, 70]
    assert tool_outputs(transcript) == ["Denhan"]
    assert record.touched_document


def untimed(record: RolloutRecord) -> dict:
    """The record without its wall-clock times, which no two runs share."""
    data = record.to_dict()
    data.pop("repl_seconds")
    for sub in data["sub_calls"]:
        sub.pop("seconds")
    return data


def test_sub_transcripts_nest_every_sub_call_under_its_caller_and_change_no_count() -> None:
    def script() -> Script:
        return Script(
            tools_msg(call("llm", {"prompt": "Where?", "slice": "0:200"})),
            tools_msg(call("repl", {"code": "print(llm('Where?', doc[0:60]))"})),
            answer("Denhan (depth 2, from REPL)"),
            tools_msg(call("llm", {"prompt": "Where else?", "slice": "10:80"})),
            answer("Denhan (depth 2, tool)"),
            answer("Denhan"),
            answer("Denhan"),
        )

    subs: list[dict[str, Any]] = []
    traced = asyncio.run(
        run_rollout(DOCUMENT, "Where did Orin Vale live?", script(), sub_transcripts=subs)
    )
    plain = rollout(script())
    assert untimed(traced) == untimed(plain)  # the log is for readers, never for the record
    shape = [
        (s["index"], s["parent"], s["turn"], s["depth"], s["kind"], s["origin"], s["slice"])
        for s in subs
    ]
    # The depth-1 agent was started by the root's first reply; its first reply's cell made the
    # REPL sub-call and its second reply the tool's, whose range maps back to the document.
    assert shape == [
        (0, None, 1, 1, "rlm", "tool", [0, 200]),
        (1, 0, 1, 2, "plain", "repl", None),
        (2, 0, 2, 2, "plain", "tool", [10, 80]),
    ]
    assert [s["prompt"] for s in subs] == ["Where?", "Where?", "Where else?"]
    child = subs[0]["messages"]
    roles = ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [m["role"] for m in child] == roles
    assert child[-1]["content"] == "<answer>Denhan</answer>"
    reader = subs[2]["messages"]
    assert [m["role"] for m in reader] == ["system", "user", "assistant"]
    assert DOCUMENT[10:80] in reader[1]["content"]
    assert reader[2]["content"] == "<answer>Denhan (depth 2, tool)</answer>"


def test_sub_calls_can_have_their_own_chat() -> None:
    root = Script(tools_msg(call("llm", {"prompt": "Where?", "slice": "0:200"})), answer("Denhan"))
    sub = Script(answer("Denhan"))
    record = asyncio.run(run_rollout(DOCUMENT, "Where did Orin Vale live?", root, sub_chat=sub))
    assert [root.role(i) for i in range(len(root.requests))] == ["root", "root"]
    assert [sub.role(i) for i in range(len(sub.requests))] == ["sub"]
    assert record.final_answer == "Denhan" and record.llm_calls == 1


def test_a_record_passed_in_keeps_what_an_interrupted_rollout_counted() -> None:
    class Stop(RuntimeError):
        pass

    replies = [tools_msg(call("repl", {"code": "print(doc[0:20])"}))]

    async def chat(messages: Any, tools: Any) -> ChatReply:
        if not replies:
            raise Stop()  # what a trainer's limit looks like from inside the loop
        return ChatReply(replies.pop(0), {"prompt_tokens": 30, "completion_tokens": 5})

    record = RolloutRecord()
    with pytest.raises(Stop):
        asyncio.run(run_rollout(DOCUMENT, "q", chat, record=record))
    assert record.turns == 1 and record.root_tokens == 35
    assert record.touched_document and record.tool_calls == {"repl": 1}
    assert record.final_answer is None


def test_max_depth_zero_offers_no_llm_and_refuses_it() -> None:
    caps = RolloutCaps(max_depth=0)
    script = Script(
        tools_msg(
            call("llm", {"prompt": "q", "slice": "0:10"}),
            call("repl", {"code": "print(llm('q', 'text'))"}, "b"),
        ),
        answer("Denhan"),
    )
    transcript: list = []
    record = rollout(script, caps, transcript)
    assert [t["function"]["name"] for t in script.requests[0][1]] == ["repl"]
    outputs = tool_outputs(transcript)
    assert "unknown tool 'llm'" in outputs[0]
    assert "not available at this depth" in outputs[1]
    assert record.llm_calls == 0 and record.depth_used == 0


def test_token_accounting_with_reported_usage() -> None:
    script = Script(
        tools_msg(call("llm", {"prompt": "q", "slice": "0:100"})),
        answer("x"),  # sub-agent
        answer("Denhan"),
        usage={"prompt_tokens": 100, "completion_tokens": 7},
    )
    transcript: list = []
    record = rollout(script, None, transcript)
    assert record.usage_reported_calls == 3 and record.estimated_calls == 0
    assert record.root_tokens == 2 * 107 and record.sub_tokens == 107
    assert record.root_tool_output_tokens == 1  # "x": ceil(1 / 4)
    assert record.budget_tokens == record.total_tokens == 321


def test_token_accounting_without_usage_is_characters_over_four() -> None:
    script = Script(tools_msg(call("repl", {"code": "print(doc[:400])"})), answer("Denhan"))
    transcript: list = []
    record = rollout(script, None, transcript)
    assert record.estimated_calls == 2 and record.usage_reported_calls == 0
    assert record.root_tool_output_tokens == 100  # 400 characters printed
    schemas = len(json.dumps(script.requests[0][1], separators=(",", ":")))
    first = sum(len(m["content"] or "") for m in script.requests[0][0]) + schemas
    assert record.root_prompt_tokens >= (first + 3) // 4
    assert record.sub_tokens == 0 and record.budget_tokens == record.root_tokens


def test_document_touch_rules() -> None:
    typed = Script(
        tools_msg(call("repl", {"code": "x = 'Orin Vale lived in Denhan.'"})),
        tools_msg(call("llm", {"prompt": "q", "slice": "x"})),
        answer("Denhan"),
        answer("Denhan"),
    )
    assert not rollout(typed).touched_document  # text the model typed is not the document
    # A range handed to a sub-agent that answers at once was never read: no touch.
    ranged = Script(
        tools_msg(call("llm", {"prompt": "q", "slice": "0:50"})), answer("a"), answer("b")
    )
    assert not rollout(ranged).touched_document
    # The same range in a plain reader's prompt, or printed by the sub-agent and read, is.
    plain = Script(
        tools_msg(call("llm", {"prompt": "q", "slice": "0:50"})), answer("a"), answer("b")
    )
    assert rollout(plain, RolloutCaps(max_depth=1)).touched_document
    read = Script(
        tools_msg(call("llm", {"prompt": "q", "slice": "0:50"})),
        tools_msg(call("repl", {"code": "print(doc)"})),
        answer("a"),
        answer("b"),
    )
    record = rollout(read)
    assert record.touched_document and record.depth_used == 1


def test_record_round_trips_through_json() -> None:
    script = Script(
        tools_msg(call("llm", {"prompt": "q", "slice": "0:50"})), answer("a"), answer("Denhan")
    )
    record = rollout(script)
    restored = RolloutRecord.from_dict(json.loads(json.dumps(record.to_dict())))
    assert restored == record
    assert json.loads(json.dumps(record.summary()))["final_answer"] == "Denhan"


def test_sessions_closed_when_the_model_call_fails(started_sessions: list[SandboxSession]) -> None:
    started = started_sessions

    class Boom(RuntimeError):
        pass

    replies = [
        tools_msg(call("repl", {"code": "print(1)"})),
        tools_msg(call("llm", {"prompt": "q", "slice": "0:50"})),
        tools_msg(call("repl", {"code": "print(2)"})),  # the sub-agent opens its own sandbox
    ]

    async def chat(messages: Any, tools: Any) -> ChatReply:
        if not replies:
            raise Boom()
        return ChatReply(replies.pop(0))

    with pytest.raises(Boom):
        asyncio.run(run_rollout(DOCUMENT, "q", chat))
    assert len(started) == 2 and all(s._closed for s in started)


def test_sessions_closed_on_cancellation(started_sessions: list[SandboxSession]) -> None:
    started = started_sessions

    async def main() -> None:
        gate = asyncio.Event()

        async def chat(messages: Any, tools: Any) -> ChatReply:
            if not started:
                return ChatReply(tools_msg(call("repl", {"code": "print(1)"})))
            gate.set()
            await asyncio.sleep(3600)
            raise AssertionError("not reached")

        task = asyncio.ensure_future(run_rollout(DOCUMENT, "q", chat))
        await gate.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert len(started) == 1 and started[0]._closed


def test_rollout_tools_serve_an_adapter_driving_its_own_turns() -> None:
    async def main() -> RolloutRecord:
        sub = Script(answer("Denhan"))
        async with RolloutTools(DOCUMENT, sub, RolloutCaps()) as tools:
            assert "characters" in tools.system_prompt()
            out = await tools.call("repl", '{"code": "print(doc[16:40])"}')
            assert out == DOCUMENT[16:40]
            assert await tools.call("llm", {"prompt": "Where?", "slice": "0:60"}) == "Denhan"
            assert (await tools.call("nope", "{}")).startswith("Error: unknown tool")
            return tools.finish("<answer>Denhan</answer>", "answer")

    record = asyncio.run(main())
    assert record.repl_calls == 1 and record.llm_calls == 1 and record.tool_errors == 1
    assert record.final_answer == "Denhan" and record.touched_document


def test_repl_llm_calls_per_cell_follow_the_sub_call_budget(
    started_sessions: list[SandboxSession],
) -> None:
    started = started_sessions
    code = (
        "out = []\n"
        "for i in range(10):\n"
        "    try:\n"
        "        out.append(llm('Where?', doc[:60]))\n"
        "    except LLMError as e:\n"
        "        out.append('E:' + str(e))\n"
        "print(out)"
    )

    async def main() -> tuple[str, RolloutRecord]:
        sub = Script(answer("Denhan"), answer("Denhan"))
        caps = RolloutCaps(max_sub_calls=2, max_depth=1)
        async with RolloutTools(DOCUMENT, sub, caps) as tools:
            out = await tools.call("repl", {"code": code})
            return out, tools.record

    out, record = asyncio.run(main())
    assert started[0].config.max_llm_calls_per_run == 2
    assert out.count("'Denhan'") == 2 and out.count("more than 2 times") == 8
    assert len(record.sub_calls) == 2 and record.tool_errors == 0


def test_repl_llm_refusal_text_reaches_the_code() -> None:
    code = "try:\n    llm('', doc[:60])\nexcept LLMError as e:\n    print('refused:', e)"

    async def main() -> tuple[str, RolloutRecord]:
        async with RolloutTools(DOCUMENT, Script(), RolloutCaps()) as tools:
            return await tools.call("repl", {"code": code}), tools.record

    out, record = asyncio.run(main())
    assert out.startswith("refused: llm() prompt must be 1 to 2,000 characters")
    assert record.tool_errors == 1


def test_session_started_after_close_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[SandboxSession] = []
    original = SandboxSession.start.__func__

    async def main() -> str:
        entered, gate = asyncio.Event(), asyncio.Event()

        async def slow_start(cls, *args: Any, **kwargs: Any) -> SandboxSession:
            entered.set()
            await gate.wait()
            session = await original(cls, *args, **kwargs)
            started.append(session)
            return session

        monkeypatch.setattr(SandboxSession, "start", classmethod(slow_start))
        tools = RolloutTools(DOCUMENT, Script(), RolloutCaps())
        task = asyncio.ensure_future(tools.call("repl", {"code": "x = 1"}))
        await entered.wait()
        await tools.close()
        gate.set()
        return await task

    out = asyncio.run(main())
    assert out == "Error: the rollout is over."
    assert len(started) == 1 and started[0]._closed
