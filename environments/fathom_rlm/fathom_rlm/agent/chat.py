"""The one thing the agent loop needs from a model: an OpenAI-compatible async chat function.

Adapters build a `ChatFn` from whatever client their framework hands them (a verifiers client, an
HTTP endpoint, a scripted policy called in-process); the loop never imports a framework.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

# The estimate where a server reports no usage; imported from here by the loop and adapters.
from fathom_rlm.tokens import chars_to_tokens as chars_to_tokens

Message = dict[str, Any]
ToolSchema = dict[str, Any]


@dataclass
class ChatReply:
    """One assistant turn: an OpenAI-style message dict and, when the server reports it, usage."""

    message: Message
    """`{"role": "assistant", "content": str | None, "tool_calls": [...]?}`."""
    usage: dict[str, int] | None = field(default=None)
    """`{"prompt_tokens": int, "completion_tokens": int}` if reported, else None."""
    finish_reason: str | None = field(default=None)
    """The server's `finish_reason` when it gives one: "length" means the reply was cut at
    the completion-token cap (the loop ends the rollout as truncated)."""


ChatFn = Callable[[list[Message], list[ToolSchema] | None], Awaitable[ChatReply]]
"""`await chat(messages, tool_schemas_or_None) -> ChatReply`.

Any object with `.message` and `.usage` attributes is accepted as the reply (a scripted policy's
result type duck-types; `.finish_reason` is read when present), so an adapter rarely needs to
convert.
"""


def chat_request(
    model: str, messages: list[Message], tools: list[ToolSchema] | None, max_tokens: int | None
) -> dict[str, Any]:
    """The JSON body of an OpenAI-compatible `/chat/completions` call (no tools key without
    tools; `max_tokens` only when a cap is given)."""
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = tools
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


def chat_reply(payload: dict[str, Any]) -> ChatReply:
    """The first choice's message, usage and finish reason of a `/chat/completions` response."""
    choice = payload["choices"][0]
    finish = choice.get("finish_reason")
    return ChatReply(
        choice["message"], payload.get("usage"), finish if isinstance(finish, str) else None
    )


def message_chars(message: Message) -> int:
    """Characters a message contributes to a prompt: its text plus any tool-call arguments."""
    content = message.get("content")
    n = len(content) if isinstance(content, str) else 0
    if isinstance(content, list):  # multi-part content: count the text parts only
        n = sum(len(p.get("text", "")) for p in content if isinstance(p, dict))
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            name, arguments = fn.get("name"), fn.get("arguments")
            n += len(name) if isinstance(name, str) else 0
            n += len(arguments) if isinstance(arguments, str) else _text_len(arguments)
    return n


def _text_len(value: Any) -> int:
    """Length of a non-string value as JSON text; 0 for values that cannot be shown at all."""
    if not value:
        return 0
    try:
        return len(json.dumps(value))
    except (TypeError, ValueError, RecursionError):
        return 0


def schema_chars(schemas: list[ToolSchema] | None) -> int:
    """Characters the tool schemas add to every request that offers them."""
    return len(json.dumps(schemas, separators=(",", ":"))) if schemas else 0


def reported_usage(usage: Any) -> tuple[int, int] | None:
    """`(prompt_tokens, completion_tokens)` if the server reported both as integers, else None."""
    if usage is None:
        return None
    get = usage.get if isinstance(usage, dict) else lambda k: getattr(usage, k, None)
    prompt, completion = get("prompt_tokens"), get("completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int) and prompt >= 0 and completion >= 0:
        return prompt, completion
    return None
