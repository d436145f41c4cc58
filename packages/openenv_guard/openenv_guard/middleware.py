"""The guard in front of an openenv-core app: a plain ASGI wrapper, so openenv-core's routes,
sessions and `/ws` loop stay its own. Before a request reaches the app it checks the bearer
token, the client's session slots, the body or message size, the JSON depth and (for `reset` and
`step`, on HTTP and on `/ws` alike) the arguments against the environment's pydantic models, and
a client's reset rate. A
refused HTTP request gets one line of JSON and a status; a refused `/ws` message gets one line of
JSON in openenv-core's error shape and the session goes on. `/ws` sessions idle or alive too long
are closed with a close code that says which; a request body that does not arrive in time gets 408.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import json.decoder
import json.scanner
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from .quotas import Client, ClientQuotas, offload, serving
from .settings import GuardSettings, client_name

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

OPEN_PATHS = ("/healthz",)
OFFLOAD_BYTES = 256 * 1024
"""Parse larger bodies and messages on the offload pool, not the event loop."""
CLOSE_TOO_BIG = 1009  # RFC 6455: message too big
CLOSE_TRY_LATER = 1013  # RFC 6455: try again later (no session slot)
CLOSE_IDLE = 4408  # application codes: idle timeout
CLOSE_LIFE = 4410  # maximum session life reached


class Refused(Exception):
    """A request or message refused before any work; `str()` is the one-line reason."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


def error_body(code: str, message: str) -> bytes:
    return json.dumps({"error": message, "code": code}, separators=(",", ":")).encode()


def ws_error(code: str, message: str) -> str:
    """An error in openenv-core's `/ws` shape (its client raises it as `Server error: ...`)."""
    data = {"message": message, "code": code}
    return json.dumps({"type": "error", "data": data}, separators=(",", ":"))


def describe_errors(errors: Sequence[Mapping[str, Any]]) -> str:
    """pydantic's error list (`ValidationError.errors()`, or FastAPI's) as one short line:
    `field: problem; field: problem`."""
    parts = []
    for item in errors[:3]:
        where = ".".join(str(p) for p in item["loc"]) or "value"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)[:300]


def too_deep(value: Any, limit: int) -> bool:
    """Whether containers nest more than `limit` deep (iterative: no recursion to exhaust)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return False


def too_many_values(text: str | bytes, limit: int) -> bool:
    """Whether JSON `text` may hold more than `limit` values (object keys count as values),
    decided before anything is parsed. Outside strings, every value but the first of a container
    follows a `,`, every object value a `:`, and the first of a container its opening bracket,
    so 1 + those four characters bound the values from above (too high only by the number of
    empty containers); every string is a value, so more than `limit` strings is over too. The
    characters are counted by C `count` calls between strings, and the walk from string to string
    stops as soon as either count passes the limit: the work is bounded by the limit, not the
    size."""
    quote, backslash = ('"', "\\") if isinstance(text, str) else (b'"', b"\\")
    marks = (",", ":", "[", "{") if isinstance(text, str) else (b",", b":", b"[", b"{")
    size, position, values, strings = len(text), 0, 1, 0
    while True:
        start = text.find(quote, position)  # type: ignore[arg-type]
        end = size if start < 0 else start
        values += sum(text.count(mark, position, end) for mark in marks)  # type: ignore[misc]
        if values > limit or strings > limit:
            return True
        if start < 0:
            return False
        strings += 1
        position = start + 1
        while True:  # past the closing quote (an escaped one follows an odd run of backslashes)
            close = text.find(quote, position)  # type: ignore[arg-type]
            if close < 0:
                return False  # not JSON: the parser says so
            run = close
            while run > position and text[run - 1 : run] == backslash:
                run -= 1
            position = close + 1
            if (close - run) % 2 == 0:
                break


def _string_span(text: str, start: int, strict: bool) -> tuple[str, int]:
    """A JSON string for the envelope decoder: short ones decoded exactly; a long one (a model's
    reply) is only delimited, by `str.find` steps, and returned undecoded. Its type and rough
    length are all a check needs, and no single long C call holds the interpreter lock (the C
    decoder would, for tens of milliseconds on a 15 MB reply, stalling the event loop)."""
    position = start
    while True:
        quote = text.find('"', position)
        if quote < 0:
            raise json.JSONDecodeError("Unterminated string", text, start - 1)
        backslash = quote - 1
        while backslash >= start and text[backslash] == "\\":
            backslash -= 1
        if (quote - 1 - backslash) % 2 == 0:  # the quote is not escaped
            break
        position = quote + 1
    if quote - start <= 4096:
        return json.decoder.py_scanstring(text, start, strict)
    return text[start:quote], quote + 1


class _EnvelopeDecoder(json.JSONDecoder):
    """The pure-Python JSON decoder with `_string_span` for strings: large messages are checked
    off the event loop in steps short enough to let it run."""

    def __init__(self) -> None:
        super().__init__()
        self.parse_string = _string_span
        self.scan_once = json.scanner.py_make_scanner(self)


_ENVELOPE = _EnvelopeDecoder()


class ServingGuard:
    """ASGI wrapper of an openenv-core app; see the module docstring."""

    def __init__(
        self,
        app: Any,
        settings: GuardSettings,
        reset_model: type[BaseModel],
        action_model: type[BaseModel],
        quotas: ClientQuotas | None = None,
    ) -> None:
        self.app = app
        self.settings = settings
        self.quotas = quotas or ClientQuotas(settings)
        self.models = {"reset": reset_model, "step": action_model}
        self._tokens = [t.encode() for t in settings.tokens]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        client = self.identify(scope)
        if client is None or scope["path"] in self.settings.closed_paths:
            why = "a valid bearer token is required" if client is None else "this route is closed"
            status, code = (401, "UNAUTHORIZED") if client is None else (404, "CLOSED_ROUTE")
            await self._refuse_connection(scope, send, Refused(status, code, why))
            return
        with serving(client):
            if kind == "http":
                await self._http(scope, receive, send, client)
            else:
                await self._websocket(scope, receive, send, client)

    def identify(self, scope: Scope) -> Client | None:
        """The client behind a request: its token's identity (None if it has no valid one), or
        its peer address when the server has no tokens (the address a trusted proxy forwarded,
        else the connection's own). The header is `<scheme> <token>`: the scheme in any case
        (RFC 7235), then one or more spaces (RFC 6750), then the token exactly; whitespace at
        the ends of the header value is not part of it (HTTP strips it)."""
        if not self._tokens:
            peer = scope.get("client") or ("unknown", 0)
            return Client(f"peer:{peer[0]}", authenticated=False)
        header = dict(scope.get("headers") or ()).get(b"authorization", b"")
        scheme, _, presented = header.partition(b" ")
        presented = presented.lstrip(b" ")
        found = None
        for token in self._tokens:  # every token compared, in constant time each
            if hmac.compare_digest(presented, token) and scheme.lower() == b"bearer":
                found = token
        return None if found is None else Client(client_name(found.decode()), True)

    # ------------------------------------------------------------------------------ HTTP

    async def _http(self, scope: Scope, receive: Receive, send: Send, client: Client) -> None:
        counted = scope["method"] == "POST"
        if counted and not self.quotas.open_session(client):
            limit = self.settings.max_sessions_per_client
            refusal = Refused(429, "CLIENT_SESSION_LIMIT", f"at most {limit} sessions per client")
            await _respond(send, refusal)
            return
        try:
            if scope["method"] in ("POST", "PUT", "PATCH"):
                try:
                    body = await self._read_body(scope, receive)
                    await self._check_http(scope["path"], body, client)
                except Refused as refusal:
                    await _respond(send, refusal)
                    return
                receive = _replay(body)
            await self.app(scope, receive, send)
        finally:
            if counted:
                self.quotas.close_session(client)

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        limit = self.settings.max_message_bytes
        too_big = Refused(413, "TOO_LARGE", f"the body is over the limit of {limit} bytes")
        length = dict(scope.get("headers") or ()).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            raise too_big  # refused before a byte of the body is read
        chunks, size = [], 0
        deadline = self.settings.body_timeout_s
        try:
            async with asyncio.timeout(deadline):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise Refused(400, "DISCONNECTED", "the client left")
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        raise too_big
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks)
        except TimeoutError:
            raise Refused(
                408, "BODY_TIMEOUT", f"the body did not arrive within {deadline:g} s"
            ) from None

    async def _check_http(self, path: str, body: bytes, client: Client) -> None:
        value = await self._parse(body) if body.strip() else {}
        if path == "/reset":
            self._validate("reset", value)
            self._take_reset(client)
        elif path == "/step":
            if not isinstance(value, dict) or not isinstance(value.get("action"), dict):
                raise Refused(422, "VALIDATION_ERROR", "the body needs an `action` object")
            self._validate("step", value["action"])

    # ------------------------------------------------------------------------- WebSocket

    async def _websocket(self, scope: Scope, receive: Receive, send: Send, client: Client) -> None:
        if not self.quotas.open_session(client):
            limit = self.settings.max_sessions_per_client
            await receive()  # websocket.connect
            await send({"type": "websocket.accept"})
            text = ws_error("CLIENT_SESSION_LIMIT", f"at most {limit} sessions per client")
            await send({"type": "websocket.send", "text": text})
            await send({"type": "websocket.close", "code": CLOSE_TRY_LATER})
            return
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self.quotas.close_session(client)

        try:
            session = _GuardedSocket(self, client, receive, send, release)
            await self.app(scope, session.receive, session.send)
        finally:
            release()

    async def check_message(self, text: str, client: Client) -> tuple[str | None, Any]:
        """(None, the message's type) if a `/ws` message may go to the app, else (the one-line
        error to send back, None)."""
        kind = None
        try:
            value = await self._parse(text)
            if not isinstance(value, dict):
                raise Refused(400, "VALIDATION_ERROR", "a message is a JSON object")
            kind = value.get("type")
            if kind is not None and not isinstance(kind, str):
                raise Refused(422, "VALIDATION_ERROR", "`type` must be a string")
            if kind == "mcp":
                raise Refused(404, "CLOSED_ROUTE", "MCP messages are closed on this server")
            if kind in self.models:
                data = value.get("data", {})
                if not isinstance(data, dict):
                    raise Refused(422, "VALIDATION_ERROR", "`data` must be an object")
                self._validate(kind, data)
            if kind == "reset":
                self._take_reset(client)
        except Refused as refusal:
            return ws_error(refusal.code, str(refusal)), None
        return None, kind

    # ---------------------------------------------------------------------------- common

    async def _parse(self, raw: bytes | str) -> Any:
        """JSON within the value-count and depth limits (large inputs checked and parsed off
        the event loop), else Refused; text that is not JSON is left for the app to report
        (None)."""
        limit, values = self.settings.max_json_depth, self.settings.max_json_values
        deep = Refused(400, "TOO_DEEP", f"JSON nests deeper than {limit} levels")

        def parse(raw: bytes | str) -> Any:
            if too_many_values(raw, values):  # before anything is decoded or allocated
                raise Refused(400, "TOO_MANY_VALUES", f"JSON holds more than {values} values")
            if isinstance(raw, bytes) and len(raw) > OFFLOAD_BYTES:
                raw = raw.decode("utf-8", "replace")
            try:
                value = json.loads(raw) if len(raw) <= OFFLOAD_BYTES else _ENVELOPE.decode(raw)
            except RecursionError:
                raise deep from None
            except (json.JSONDecodeError, UnicodeDecodeError):
                return None
            except ValueError:  # the interpreter's cap on the digits of an integer
                digits = f"a number has over {sys.get_int_max_str_digits()} digits"
                raise Refused(400, "VALIDATION_ERROR", digits) from None
            if too_deep(value, limit):
                raise deep
            return value

        return parse(raw) if len(raw) <= OFFLOAD_BYTES else await offload(parse, raw)

    def _take_reset(self, client: Client) -> None:
        wait = self.quotas.take_reset(client)
        if wait > 0:
            s = self.settings
            raise Refused(
                429,
                "RATE_LIMITED",
                f"this client's resets are limited to {s.client_reset_rate:g}/s (burst "
                f"{s.client_reset_burst}); retry in {max(wait, 0.1):.1f} s",
            )

    def _validate(self, kind: str, data: Any) -> None:
        if data is None:
            return  # not JSON: the app answers that itself
        try:
            self.models[kind].model_validate(data)
        except ValidationError as error:
            raise Refused(422, "VALIDATION_ERROR", describe_errors(error.errors())) from None

    async def _refuse_connection(self, scope: Scope, send: Send, refusal: Refused) -> None:
        if scope["type"] == "http":
            await _respond(send, refusal)
        else:  # closing before accepting: the handshake is answered 403
            await send({"type": "websocket.close", "code": 1008, "reason": str(refusal)})


class _GuardedSocket:
    """The app's view of one `/ws` connection: checked messages in, idle and life timeouts.
    The client's session slot is released as soon as it leaves (a close message or frame), not
    when openenv-core has finished closing the environment: a client that opens its next
    session right away must not find its own last one still counted."""

    def __init__(
        self,
        guard: ServingGuard,
        client: Client,
        receive: Receive,
        send: Send,
        release: Callable[[], None],
    ) -> None:
        self.guard, self.client = guard, client
        self._receive, self._send, self.release = receive, send, release
        self.started = time.monotonic()
        self.closed = False
        self.client_left = False  # the client's disconnect has been received

    async def receive(self) -> Message:
        settings = self.guard.settings
        while True:
            if self.closed:
                return {"type": "websocket.disconnect", "code": 1000}
            life_left = settings.max_session_life_s - (time.monotonic() - self.started)
            idle = settings.idle_timeout_s or float("inf")
            try:
                message = await asyncio.wait_for(self._receive(), max(0.0, min(idle, life_left)))
            except TimeoutError:
                if idle < life_left:
                    return await self._close(CLOSE_IDLE, "IDLE_TIMEOUT", f"idle for {idle:g} s")
                life = settings.max_session_life_s
                return await self._close(CLOSE_LIFE, "SESSION_LIFE", f"session over {life:g} s")
            if message["type"] != "websocket.receive":
                if message["type"] == "websocket.disconnect":
                    self.client_left = True
                    self.release()
                return message
            text = message.get("text")
            if text is None:  # a binary frame: openenv-core reads text only
                text = (message.get("bytes") or b"").decode("utf-8", "replace")
            if len(text) > settings.max_message_bytes:
                limit = settings.max_message_bytes
                return await self._close(CLOSE_TOO_BIG, "TOO_LARGE", f"message over {limit} B")
            error, kind = await self.guard.check_message(text, self.client)
            if error is None:
                if kind == "close":
                    self.release()
                return {"type": "websocket.receive", "text": text}
            await self._send({"type": "websocket.send", "text": error})

    async def send(self, message: Message) -> None:
        # openenv-core closes the socket after its client has left: a close frame to nobody,
        # which uvicorn answers with a ClientDisconnected traceback in the log of every normal
        # session end. There is no one to tell, so it is not sent.
        if self.client_left and message["type"] == "websocket.close":
            return
        if not self.closed:
            await self._send(message)

    async def _close(self, code: int, error: str, reason: str) -> Message:
        self.closed = True
        self.release()
        try:
            await self._send({"type": "websocket.send", "text": ws_error(error, reason)})
            await self._send({"type": "websocket.close", "code": code, "reason": reason})
        except Exception:  # the client may be gone already; the session closes either way
            pass
        return {"type": "websocket.disconnect", "code": code}


async def _respond(send: Send, refusal: Refused) -> None:
    body = error_body(refusal.code, str(refusal))
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if refusal.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if refusal.status in (408, 413):  # the rest of the body is not read: the connection ends
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _replay(body: bytes) -> Receive:
    """A `receive` that hands the app the body already read, then waits like a live one."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # nothing more will come; the server cancels on disconnect
        return {"type": "http.disconnect"}

    return receive
