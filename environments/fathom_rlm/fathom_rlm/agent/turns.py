"""The turn loop shared by the root agent and by sub-calls that are small agents themselves."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fathom_rlm.agent.chat import ChatFn, ChatReply, Message, ToolSchema


@dataclass
class ToolCall:
    """One tool call of an assistant message, with the id the tool message must answer."""

    id: str
    name: str | None
    arguments: Any


def normalize_assistant(message: Any, turn: int) -> tuple[Message, list[ToolCall]]:
    """A clean copy of the reply plus its tool calls; every call gets an id so it can be answered.

    Malformed calls (no function, no name) are kept with `name=None`, so the loop can answer them
    with an error instead of crashing or silently dropping them.
    """
    if not isinstance(message, dict):
        message = {"content": str(message) if message is not None else None}
    content = message.get("content")
    clean: Message = {"role": "assistant", "content": content if isinstance(content, str) else ""}
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raw_calls = [raw_calls]
    calls: list[ToolCall] = []
    clean_calls: list[dict[str, Any]] = []
    for i, raw in enumerate(raw_calls):
        raw = raw if isinstance(raw, dict) else {}
        call_id = raw.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = f"call_{turn}_{i}"
        fn = raw.get("function")
        fn = fn if isinstance(fn, dict) else {}
        name = fn.get("name")
        name = name if isinstance(name, str) and name else None
        arguments = fn.get("arguments")
        calls.append(ToolCall(call_id, name, arguments))
        args_text = arguments if isinstance(arguments, str) else _dump(arguments)
        clean_calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name or "", "arguments": args_text},
            }
        )
    if clean_calls:
        clean["tool_calls"] = clean_calls
    return clean, calls


def _dump(value: Any) -> str:
    """Non-string arguments as text for the transcript; never raises (deep nesting included)."""
    import json

    try:
        return json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        try:
            return str(value)[:10_000]
        except Exception:  # a value whose str() fails or recurses too deep
            return f"<unprintable {type(value).__name__}>"


TRUNCATED = "truncated"
"""`ended_by` of a loop whose last reply was cut at the completion-token cap."""
CUT_FINISH_REASON = "length"
"""The OpenAI `finish_reason` of a reply cut at `max_tokens`."""


def was_cut(reply: Any) -> bool:
    """Whether the server says the reply stopped at the completion-token cap."""
    return getattr(reply, "finish_reason", None) == CUT_FINISH_REASON


@dataclass
class TurnsResult:
    final_message: str | None
    turns: int
    ended_by: str


async def run_turns(
    chat: ChatFn,
    messages: list[Message],
    schemas: list[ToolSchema] | None,
    max_turns: int,
    execute: Callable[[ToolCall, int], Awaitable[str]],
    on_reply: Callable[[list[Message], ToolSchema | list[ToolSchema] | None, ChatReply], None],
) -> TurnsResult:
    """Ask the model, run its tool calls, repeat; a reply without tool calls ends the loop.

    A reply the server cut at the completion-token cap (`finish_reason == "length"`) ends the
    loop as `TRUNCATED` with no final message, whatever it holds: its text stopped mid-thought and
    a tool call in it may be cut mid-JSON, so neither is taken as the model's answer or run (the
    same rollout that legacy verifiers marks `is_truncated`).

    `execute(call, index)` gets the call's position in its reply so it can refuse calls beyond a
    per-turn cap. `messages` is extended in place with the assistant and tool messages, so the
    caller keeps the transcript. Tool calls of one reply run one after another, in order, so the
    record and the sandbox state are deterministic.
    """
    for turn in range(max_turns):
        request = list(messages)
        reply = await chat(request, schemas)
        on_reply(request, schemas, reply)
        assistant, calls = normalize_assistant(getattr(reply, "message", None), turn)
        messages.append(assistant)
        if was_cut(reply):
            return TurnsResult(None, turn + 1, TRUNCATED)
        if not calls:
            return TurnsResult(assistant["content"], turn + 1, "answer")
        for index, call in enumerate(calls):
            output = await execute(call, index)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return TurnsResult(None, max_turns, "max_turns")
