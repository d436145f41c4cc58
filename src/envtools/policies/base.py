"""The contract every scripted policy implements.

A policy sees exactly what a model behind an OpenAI-compatible chat endpoint would see (the
messages and the tool schemas of one request) and answers with one assistant message. It never
receives gold answers through the request; a policy that needs world knowledge to play a role
(for example a perfect reader of a slice it was shown) documents where that knowledge comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class ChatResult:
    """One assistant turn: an OpenAI-style message and, optionally, token usage."""

    message: dict[str, Any]
    """`{"role": "assistant", "content": str | None, "tool_calls": [...]?}`."""
    usage: dict[str, int] | None = field(default=None)
    """`{"prompt_tokens": int, "completion_tokens": int}` when the policy reports usage."""


class Policy(Protocol):
    """A scripted policy, selected by its `name` as the request's `model`."""

    name: str

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ChatResult: ...
