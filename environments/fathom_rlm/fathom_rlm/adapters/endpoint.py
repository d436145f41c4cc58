"""The OpenAI-compatible chat-completions endpoint that answers sub-calls, and the core's `ChatFn`
over it (httpx, no SDK).

`Endpoint` is the one description of such an endpoint: the TRL adapter takes it as `sub_*`
arguments, the OpenEnv server as `--llm-*` flags (both derived from its fields). `endpoint_chat`
is the one chat function: the v1 harness calls the rollout's interception endpoint with it, the
OpenEnv server and the TRL adapter their sub-call endpoint.
"""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import httpx

from fathom_rlm.agent import ChatFn, ChatReply, Message, ToolSchema
from fathom_rlm.agent.chat import chat_reply, chat_request


@dataclass(frozen=True)
class Endpoint:
    """Where `llm` sub-calls go, and how long they may take."""

    base_url: str = field(metadata={"help": "OpenAI-compatible endpoint for llm"})
    model: str = field(metadata={"help": "model name sent with sub-calls"})
    api_key_var: str | None = field(
        default=None, metadata={"help": "env var holding its API key (none: no key is sent)"}
    )
    timeout_s: float = field(
        default=600.0, metadata={"help": "seconds one sub-call may take, reply included"}
    )
    connect_timeout_s: float | None = field(
        default=10.0, metadata={"help": "seconds to connect (None: timeout_s)"}
    )

    @classmethod
    def from_options(cls, options: Mapping[str, Any], prefix: str, **defaults: Any) -> Endpoint:
        """The endpoint from the `<prefix><field>` entries of `options` (`defaults` for the
        rest); a bad value raises ValueError naming the prefixed option."""
        names = [f.name for f in fields(cls) if prefix + f.name in options]
        values = {**defaults, **{name: options[prefix + name] for name in names}}
        if "timeout_s" in values:
            values["timeout_s"] = _seconds(values["timeout_s"], prefix + "timeout_s")
        if values.get("connect_timeout_s") is not None:
            values["connect_timeout_s"] = _seconds(
                values["connect_timeout_s"], prefix + "connect_timeout_s"
            )
        return cls(**values)

    def api_key(self) -> str:
        """The key from `api_key_var` ("" when it names no variable or an unset one)."""
        return os.environ.get(self.api_key_var, "") if self.api_key_var else ""

    def http_client(self, *, send_key: bool = True) -> httpx.AsyncClient:
        """An HTTP client on the endpoint, with its API key unless `send_key` is false."""
        key = self.api_key() if send_key else ""
        return httpx.AsyncClient(
            base_url=self.base_url.rstrip("/") + "/",
            verify=_tls_context(),
            headers={"Authorization": f"Bearer {key}"} if key else {},
            timeout=httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s or self.timeout_s),
        )


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, made once per process: making it loads the CA bundle, some
    40 ms of CPU that each new client (each OpenEnv reset) would pay again."""
    return httpx.create_ssl_context()


def _seconds(value: Any, name: str) -> float:
    seconds = float(value)
    if not seconds > 0:
        raise ValueError(f"{name} must be > 0, got {seconds!r}")
    return seconds


def endpoint_chat(
    client: httpx.AsyncClient, model: str, max_completion_tokens: int | None = None
) -> ChatFn:
    """POST each call to `chat/completions` under the client's base URL.

    `max_completion_tokens` is sent as `max_tokens` when given (an endpoint that overrides
    sampling knobs, like verifiers' interception endpoint, may replace it). An HTTP or protocol
    error raises.
    """

    async def chat(messages: list[Message], tools: list[ToolSchema] | None) -> ChatReply:
        body = chat_request(model, messages, tools, max_completion_tokens)
        response = await client.post("chat/completions", json=body)
        response.raise_for_status()
        return chat_reply(response.json())

    return chat


def per_call_chat(endpoint: Endpoint, max_completion_tokens: int | None = None) -> ChatFn:
    """`endpoint_chat` on a client of its own for each call, for a caller whose event loop may
    differ from one call to the next (an HTTP client's connections belong to one loop)."""

    async def chat(messages: list[Message], tools: list[ToolSchema] | None) -> ChatReply:
        async with endpoint.http_client() as client:
            return await endpoint_chat(client, endpoint.model, max_completion_tokens)(
                messages, tools
            )

    return chat
