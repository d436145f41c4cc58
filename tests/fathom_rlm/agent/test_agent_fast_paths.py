"""Reads of `doc` before a REPL has state need no sandbox worker, and change nothing else."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fathom_rlm.agent import ChatReply, RolloutCaps, run_rollout
from fathom_rlm.sandbox import SandboxSession

DOCUMENT = "Chapter 1: Rain\n\nOrin Vale lived in Denhan. " + "Filler about weather. " * 400


def call(name: str, arguments: dict[str, Any], call_id: str = "c") -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def tools_msg(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def answer(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": f"<answer>{text}</answer>"}


def repl(code: str, call_id: str = "c") -> dict[str, Any]:
    return call("repl", {"code": code}, call_id)


def _run(replies: list[dict[str, Any]], transcript: list[dict[str, Any]]):
    queue = list(replies)

    async def chat(messages: Any, tools: Any) -> ChatReply:
        return ChatReply(queue.pop(0) if queue else answer("fallback"))

    return asyncio.run(run_rollout(DOCUMENT, "q", chat, RolloutCaps(), transcript=transcript))


def _tool_outputs(transcript: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in transcript if m["role"] == "tool"]


def test_sub_agent_reading_its_slice_starts_no_worker(
    started_sessions: list[SandboxSession],
) -> None:
    started = started_sessions
    transcript: list[dict[str, Any]] = []
    record = _run(
        [
            tools_msg(call("llm", {"prompt": "Where?", "slice": "17:60"})),
            tools_msg(repl("# read\nprint(doc[0:30])", "a"), repl("doc[-5:]", "b")),
            answer("Denhan"),
            answer("Denhan"),
        ],
        transcript,
    )
    assert started == []
    assert _tool_outputs(transcript) == ["Denhan"]
    assert record.final_answer == "Denhan" and record.repl_calls == 2
    # The sub-agent read doc[0:30] of its slice (document offsets 17 to 47) and nothing else.
    assert record.shown_ranges == [] and DOCUMENT[17:47] in record.shown_texts
    assert record.sub_calls[0].read_chars == 30 and record.depth_used == 1


def test_root_read_sets_touched_document_without_a_worker(
    started_sessions: list[SandboxSession],
) -> None:
    started = started_sessions
    transcript: list[dict[str, Any]] = []
    record = _run([tools_msg(repl("print(doc[17:43])")), answer("Denhan")], transcript)
    assert started == [] and record.touched_document
    assert _tool_outputs(transcript) == [DOCUMENT[17:43]]


def test_reads_go_to_the_worker_once_the_repl_has_state(
    started_sessions: list[SandboxSession],
) -> None:
    started = started_sessions
    transcript: list[dict[str, Any]] = []
    _run(
        [
            tools_msg(repl("print(len(doc))")),
            tools_msg(repl("doc = 'changed text'")),
            tools_msg(repl("print(doc[0:7])"), repl("len(doc)", "d")),
            answer("x"),
        ],
        transcript,
    )
    assert len(started) == 1 and started[0]._closed
    assert _tool_outputs(transcript) == [
        str(len(DOCUMENT)),
        "(no output; print() what you want to see)",
        "changed",
        "12",
    ]


def test_variable_slice_before_any_assignment_is_a_clear_error() -> None:
    transcript: list[dict[str, Any]] = []
    _run(
        [
            tools_msg(repl("print(doc[0:10])")),
            tools_msg(call("llm", {"prompt": "Where?", "slice": "part"})),
            answer("x"),
        ],
        transcript,
    )
    outputs = _tool_outputs(transcript)
    assert outputs[1].startswith("Error:") and "no REPL variable named 'part'" in outputs[1]
