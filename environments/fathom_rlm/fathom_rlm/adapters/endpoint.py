"""The core's `ChatFn` over an OpenAI-compatible chat-completions endpoint (httpx, no SDK).

Shared by the v1 harness (the rollout's interception endpoint) and the OpenEnv server (the
endpoint its `llm` sub-calls go to).
"""

from __future__ import annotations

import httpx

from fathom_rlm.agent import ChatFn, ChatReply, Message, ToolSchema
from fathom_rlm.agent.chat import chat_reply, chat_request


def endpoint_chat(
    client: httpx.AsyncClient, model: str, max_completion_tokens: int | None = None
) -> ChatFn:
    """POST each call to `chat/completions` under the client's base URL.

    `max_completion_tokens` is sent as `max_tokens` when given (an endpoint that overrides
    sampling knobs, like verifiers' interception endpoint, may replace it).
    """

    async def chat(messages: list[Message], tools: list[ToolSchema] | None) -> ChatReply:
        body = chat_request(model, messages, tools, max_completion_tokens)
        response = await client.post("chat/completions", json=body)
        response.raise_for_status()
        return chat_reply(response.json())

    return chat
