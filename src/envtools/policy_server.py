"""An OpenAI-compatible chat endpoint that answers with scripted policies.

The request's `model` picks the policy by name (see `envtools.policies.registry`). Serves
`POST /v1/chat/completions` (with `stream: true`, the whole answer arrives as server-sent
events) and `GET /v1/models` on 127.0.0.1 only. The HTTP/1.1 server is built on the standard
library's asyncio, so it runs in any venv that has this package. Every connection is its own
task, so requests are answered concurrently.

    uv run python -m envtools.policy_server --port 0     # first stdout line: the base URL

From Python: `async with serve_policies() as base_url:` or, for synchronous code,
`with policy_server_in_thread() as base_url:`.

Each installed ladder (`envtools.policies.registry`) may add flags: fathom-rlm's lab adds
`--fathom-doc-tokens` and `--data PATH` / `--data-format` (a run on the user's own rows, as
`fathom_lab.evaluate --data` takes them).

For robustness tests and the soak benchmark only, `--faults SPEC` (or `faults=`) injects dropped
connections, slow replies, 500s, malformed tool calls, empty messages and replies cut at the
token cap (see `envtools.faults`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import signal
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from envtools import cli
from envtools.faults import (
    EMPTY_MESSAGE,
    SERVER_ERROR,
    FaultInjector,
    FaultPlan,
    cut_message,
    describe,
)
from envtools.policies.base import ChatResult, Policy
from envtools.policies.registry import PolicyFactory, ReplyScope, available_policies, ladders

HOST = "127.0.0.1"
MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_HEADERS = 100


class HttpError(Exception):
    """An error answered as an OpenAI-style error object."""

    def __init__(
        self, status: int, message: str, error_type: str = "invalid_request_error", **extra: Any
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = {"error": {"message": message, "type": error_type, "param": None, **extra}}


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    """One HTTP/1.1 request from the stream; None when the client closed the connection."""
    line = await reader.readline()
    if not line:
        return None
    try:
        method, target, version = line.decode("latin-1").split()
    except ValueError as error:
        raise HttpError(400, "malformed request line") from error
    headers: dict[str, str] = {}
    while True:
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        if len(headers) >= MAX_HEADERS:
            raise HttpError(400, "too many headers")
        name, _, value = raw.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader)
    else:
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError as error:
            raise HttpError(400, "bad Content-Length") from error
        if length < 0 or length > MAX_BODY_BYTES:
            raise HttpError(413, "request body too large")
        body = await reader.readexactly(length)
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    path = target.split("?", 1)[0].rstrip("/") or "/"
    return Request(method.upper(), path, headers, body, keep_alive)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = bytearray()
    while True:
        size_line = await reader.readline()
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError as error:
            raise HttpError(400, "malformed chunk size") from error
        if size == 0:
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass
            return bytes(body)
        if len(body) + size > MAX_BODY_BYTES:
            raise HttpError(413, "request body too large")
        body += await reader.readexactly(size)
        await reader.readline()


@dataclass
class EventStream:
    """A complete server-sent-event body: a streamed completion, sent in one piece."""

    events: list[dict[str, Any]]

    def encode(self) -> bytes:
        lines = [f"data: {json.dumps(event)}\n\n" for event in self.events]
        return ("".join(lines) + "data: [DONE]\n\n").encode()


def _encode_response(status: int, payload: Any, keep_alive: bool) -> bytes:
    if isinstance(payload, EventStream):
        body, content_type = payload.encode(), "text/event-stream"
    else:
        body, content_type = json.dumps(payload).encode(), "application/json"
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode("latin-1") + body


def completion_payload(
    model: str, results: list[ChatResult], finish_reason: str | None = None
) -> dict[str, Any]:
    """The OpenAI `chat.completion` object for one choice per result; `finish_reason` overrides
    the natural one ("tool_calls" or "stop"), e.g. "length" for a cut reply."""
    choices = []
    prompt_tokens = completion_tokens = 0
    reports_usage = bool(results) and all(result.usage is not None for result in results)
    for index, result in enumerate(results):
        message: dict[str, Any] = {"role": "assistant", "content": result.message.get("content")}
        tool_calls = [_wire_tool_call(call) for call in result.message.get("tool_calls") or []]
        if tool_calls:
            message["tool_calls"] = tool_calls
        choices.append(
            {
                "index": index,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
                "logprobs": None,
            }
        )
        if result.usage is not None:
            # Every choice of one request shares the prompt, so it is counted once.
            prompt_tokens = int(result.usage.get("prompt_tokens", 0))
            completion_tokens += int(result.usage.get("completion_tokens", 0))
    payload: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": choices,
    }
    if reports_usage:
        payload["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return payload


def stream_events(payload: dict[str, Any], include_usage: bool) -> EventStream:
    """A `chat.completion` as the `chat.completion.chunk` events a streaming server sends:
    per choice, one delta with the whole message and one with the finish reason; then the
    usage when it was asked for (`stream_options.include_usage`)."""
    base = {key: payload[key] for key in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    events = []
    for choice in payload["choices"]:
        delta = dict(choice["message"])
        if "tool_calls" in delta:
            delta["tool_calls"] = [
                {"index": index, **call} for index, call in enumerate(delta["tool_calls"])
            ]
        for delta_part, finish in ((delta, None), ({}, choice["finish_reason"])):
            chunk = {"index": choice["index"], "delta": delta_part, "finish_reason": finish}
            events.append({**base, "choices": [{**chunk, "logprobs": None}]})
    if include_usage and "usage" in payload:
        events.append({**base, "choices": [], "usage": payload["usage"]})
    return EventStream(events)


def _wire_tool_call(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call in wire form: an id, type "function", and arguments as a JSON string."""
    function = call.get("function", call)
    arguments = function.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {
        "id": call.get("id") or f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": function["name"], "arguments": arguments},
    }


class PolicyServer:
    """Routes requests to policies; one policy instance per name, made on first use."""

    def __init__(
        self,
        policies: Mapping[str, PolicyFactory] | None = None,
        faults: FaultPlan | FaultInjector | None = None,
        scope: ReplyScope | None = None,
    ) -> None:
        self._scope = scope or contextlib.nullcontext
        self._factories = dict(policies) if policies is not None else available_policies()
        self._instances: dict[str, Policy] = {}
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        # Test and benchmark use only (see envtools.faults); None serves every request faithfully.
        self.faults = FaultInjector(faults) if isinstance(faults, FaultPlan) else faults

    async def start(self, host: str = HOST, port: int = 0) -> str:
        """Bind and start serving; returns the base URL (ending in `/v1`)."""
        self._server = await asyncio.start_server(self._handle_connection, host, port)
        bound_port = self._server.sockets[0].getsockname()[1]
        return f"http://{host}:{bound_port}/v1"

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        # Idle keep-alive connections would otherwise outlive the server.
        for writer in list(self._writers):
            writer.close()
        await self._server.wait_closed()
        self._server = None

    def _policy(self, name: Any) -> Policy:
        if not isinstance(name, str) or name not in self._factories:
            raise HttpError(
                404,
                f"The model `{name}` does not exist. Known: {', '.join(sorted(self._factories))}",
                code="model_not_found",
            )
        if name not in self._instances:
            self._instances[name] = self._factories[name]()
        return self._instances[name]

    async def _handle_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._writers.add(writer)
        try:
            while True:
                try:
                    request = await _read_request(reader)
                except HttpError as error:
                    writer.write(_encode_response(error.status, error.body, keep_alive=False))
                    await writer.drain()
                    break
                if request is None:
                    break
                fault = self._draw_fault(request)
                if fault == "drop":
                    writer.transport.abort()  # a reset connection, as from a crashed server
                    break
                if fault == "slow":
                    assert self.faults is not None
                    await asyncio.sleep(self.faults.plan.slow_s)
                status, payload = await self.dispatch(request, fault)
                writer.write(_encode_response(status, payload, request.keep_alive))
                await writer.drain()
                if not request.keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            # The server is closing while this request waits (a slow fault): end quietly; a
            # cancelled connection task would otherwise be logged as an error by asyncio.
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _draw_fault(self, request: Request) -> str | None:
        if self.faults is None or request.method != "POST":
            return None
        if (request.path.removeprefix("/v1") or "/") != "/chat/completions":
            return None
        return self.faults.draw()

    async def dispatch(self, request: Request, fault: str | None = None) -> tuple[int, Any]:
        """Status and JSON payload for one request (`fault`: an injected error, malformed or
        empty reply in place of the policy's)."""
        path = request.path.removeprefix("/v1") or "/"
        if fault == "error":
            return 500, SERVER_ERROR
        try:
            if path == "/models":
                if request.method != "GET":
                    raise HttpError(405, "use GET /v1/models")
                return 200, self._models()
            if path == "/chat/completions":
                if request.method != "POST":
                    raise HttpError(405, "use POST /v1/chat/completions")
                return 200, await self._chat(request.body, fault)
            raise HttpError(404, f"no route for {request.method} {request.path}")
        except HttpError as error:
            return error.status, error.body
        except ValueError as error:
            # A policy that cannot answer this request (e.g. a question it has no data for).
            print(f"policy refused: {error}", file=sys.stderr)
            return 422, HttpError(422, str(error)).body
        except Exception as error:
            print(f"policy error: {error!r}", file=sys.stderr)
            return 500, HttpError(500, f"policy failed: {error!r}", "server_error").body

    def _models(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "envtools"}
                for name in sorted(self._factories)
            ],
        }

    async def _chat(self, body: bytes, fault: str | None = None) -> dict[str, Any] | EventStream:
        try:
            request = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise HttpError(400, f"request body is not valid JSON: {error}") from error
        if not isinstance(request, dict):
            raise HttpError(400, "request body must be a JSON object")
        messages = request.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise HttpError(400, "`messages` must be a list of message objects")
        tools = request.get("tools") or None
        policy = self._policy(request.get("model"))
        n = request.get("n") or 1
        if not isinstance(n, int) or not 1 <= n <= 128:
            raise HttpError(400, "`n` must be an integer from 1 to 128")
        if fault in ("malformed", "empty") and self.faults is not None:
            message = self.faults.malformed_message() if fault == "malformed" else EMPTY_MESSAGE
            results = [ChatResult(dict(message)) for _ in range(n)]
        else:
            with self._scope():
                results = [await policy.respond(messages, tools) for _ in range(n)]
        finish_reason = None
        if fault == "cut":
            results = [ChatResult(cut_message(r.message), r.usage) for r in results]
            finish_reason = "length"
        payload = completion_payload(request["model"], results, finish_reason)
        if request.get("stream"):
            options = request.get("stream_options") or {}
            return stream_events(payload, include_usage=bool(options.get("include_usage")))
        return payload


@contextlib.asynccontextmanager
async def serve_policies(
    host: str = HOST,
    port: int = 0,
    policies: Mapping[str, PolicyFactory] | None = None,
    faults: FaultPlan | FaultInjector | None = None,
    scope: ReplyScope | None = None,
) -> AsyncIterator[str]:
    """Serve the scripted policies on the running loop; yields the base URL. `scope` is entered
    around every reply (see `Ladder.configure_server`)."""
    server = PolicyServer(policies, faults, scope)
    base_url = await server.start(host, port)
    try:
        yield base_url
    finally:
        await server.close()


@contextlib.contextmanager
def policy_server_in_thread(
    host: str = HOST,
    port: int = 0,
    policies: Mapping[str, PolicyFactory] | None = None,
    faults: FaultPlan | FaultInjector | None = None,
    scope: ReplyScope | None = None,
) -> Iterator[str]:
    """Serve the scripted policies from a background thread's event loop; yields the base URL."""
    ready = threading.Event()
    started: dict[str, Any] = {}

    async def run() -> None:
        stop = asyncio.Event()
        started["stop"] = (asyncio.get_running_loop(), stop)
        try:
            async with serve_policies(host, port, policies, faults, scope) as base_url:
                started["url"] = base_url
                ready.set()
                await stop.wait()
        except BaseException as error:
            started["error"] = error
            ready.set()
            raise

    thread = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
    thread.start()
    ready.wait()
    if "error" in started:
        thread.join()
        raise RuntimeError("the policy server failed to start") from started["error"]
    try:
        yield started["url"]
    finally:
        loop, stop = started["stop"]
        loop.call_soon_threadsafe(stop.set)
        thread.join()


async def _serve_forever(
    port: int, faults: FaultPlan | None = None, scope: ReplyScope | None = None
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with serve_policies(HOST, port, faults=faults, scope=scope) as base_url:
        print(base_url, flush=True)
        await stop.wait()


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m envtools.policy_server",
        description="Serve the scripted policies as an OpenAI-compatible endpoint on 127.0.0.1. "
        "Prints the base URL on the first line of stdout.",
    )
    parser.add_argument(
        "--port", type=cli.integer(0, 65535), default=0, help="port to bind (0: any free port)"
    )
    parser.add_argument(
        "--faults",
        type=cli.checked(FaultPlan.parse, "name=value pairs of envtools.faults"),
        default=None,
        metavar="SPEC",
        help="for robustness tests only: inject faults into chat completions, e.g. "
        "'drop=0.02,slow=0.05,slow_s=1.5,error=0.02,malformed=0.05,empty=0.01,seed=0' "
        "(per-request probabilities; see envtools.faults)",
    )
    for ladder in ladders():
        if ladder.add_server_arguments is not None:
            ladder.add_server_arguments(parser)
    return parser


def _every(scopes: list[ReplyScope]) -> ReplyScope:
    """One scope that enters each of `scopes`."""

    @contextlib.contextmanager
    def scope() -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for each in scopes:
                stack.enter_context(each())
            yield

    return scope


def main(argv: list[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    scopes = [
        scope
        for ladder in ladders()
        if ladder.configure_server is not None
        and (scope := ladder.configure_server(parser, args)) is not None
    ]
    if args.faults is not None:
        print(f"injecting faults: {describe(args.faults)}", file=sys.stderr, flush=True)
    try:
        asyncio.run(_serve_forever(args.port, args.faults, _every(scopes)))
    except OSError as exc:
        if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
            raise
        parser.reject("--port", f"a port this user may bind on {HOST} ({exc.strerror})", args.port)


if __name__ == "__main__":
    main()
