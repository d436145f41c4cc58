"""The guard's limits on what a client can make the server hold, tried against the real
gsm8k-multireward server command on 127.0.0.1 with raw sockets, raw HTTP and raw WebSocket
frames: connections that send no headers (or send them a byte at a time) are closed and capped,
a body that trickles in gets 408, JSON of many tiny values is refused before it is parsed,
resets beyond a client's rate are refused while the session goes on, odd messages get the
guard's one-line errors, the bearer header is read as documented, a token file open to others
is warned about, and `X-Forwarded-For` names a client only when a trusted proxy sends it.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

FIXTURE = Path(__file__).parents[1] / "gsm8k_multireward" / "fixtures" / "adapters.jsonl"
HONEST = "limits-honest-token-0123456789"
FLOOD = "limits-flooding-token-0123456789"
HEADER_TIMEOUT_S, BODY_TIMEOUT_S, MAX_CONNECTIONS, PER_ADDRESS = 1.0, 2.0, 40, 25
MAX_JSON_VALUES, RESET_BURST = 1_000, 5
MIB = 1 << 20

pytestmark = [pytest.mark.timeout(300), pytest.mark.xdist_group("test_shared_network_limits")]


@pytest.fixture(scope="module")
def server(module_openenv_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tokens = tmp_path_factory.mktemp("tokens") / "tokens.txt"
    tokens.write_text(f"{HONEST}\n{FLOOD}\n")
    tokens.chmod(0o644)  # readable by others: the server warns and starts
    return module_openenv_server(
        [
            "gsm8k_multireward.openenv.server.app",
            *("--data", str(FIXTURE), "--token-file", str(tokens)),
            *("--header-timeout", str(HEADER_TIMEOUT_S), "--body-timeout", str(BODY_TIMEOUT_S)),
            *("--max-connections", str(MAX_CONNECTIONS)),
            *("--max-connections-per-address", str(PER_ADDRESS)),
            *("--max-json-values", str(MAX_JSON_VALUES)),
            *("--client-reset-rate", "0.2", "--client-reset-burst", str(RESET_BURST)),
        ]
    )


@pytest.fixture(scope="module")
def open_server(module_openenv_server: Any) -> Any:
    """No tokens (loopback): clients are told apart by address; 127.0.0.2 is a trusted proxy."""
    return module_openenv_server(
        [
            "gsm8k_multireward.openenv.server.app",
            *("--data", str(FIXTURE), "--max-sessions-per-client", "2"),
            *("--trusted-proxies", "127.0.0.2"),
        ]
    )


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


def gold_reply(task_index: int) -> str:
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines() if line.strip()]
    return f"So \\boxed{{{rows[task_index]['answer'].split('####')[-1].strip()}}}."


def guard_error(response: httpx.Response, status: int, code: str) -> str:
    """The guard's one-line `{"error", "code"}` body (FastAPI's own shape would fail here)."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "code"} and body["code"] == code, body
    assert "\n" not in response.text.strip()
    return body["error"]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def until_closed(reader: asyncio.StreamReader, limit_s: float = 60.0) -> bytes:
    """What the server sent on a connection until it closed it (a reset too: it closed with our
    unread bytes). The test's bound on the wait is far above the server's deadlines: reaching
    it means the server never closed the connection."""
    received = b""
    async with asyncio.timeout(limit_s):
        try:
            while chunk := await reader.read(4096):
                received += chunk
        except ConnectionResetError:
            pass
    return received


def test_connections_without_headers_are_capped_and_closed(server: Any) -> None:
    """60 connections that send half a request, from three addresses (each under its own cap),
    and one that sends its headers a byte every 0.2 s: those beyond the cap are closed at once
    (with a 503 when it arrives before the reset), the others at the header deadline (the
    trickler too, although it keeps sending); the server's descriptors stay under the cap and
    come back, and a client with a token is served. Before, every one of them stayed open."""
    host, port = address(server.url)
    fds_before = server.open_fds()

    async def scenario() -> tuple[list[bytes], str, int, int]:
        held = []
        for i in range(60):
            source = (f"127.0.0.{3 + i % 3}", 0)
            reader, writer = await asyncio.open_connection(host, port, local_addr=source)
            writer.write(b"GET /schema HTTP/1.1\r\nHost: x\r\n")
            held.append((reader, writer))
        peak = server.open_fds()

        async def trickle() -> str:
            reader, writer = await asyncio.open_connection(host, port)
            try:
                for byte in b"GET /schema HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(0.2)
                    if reader.at_eof():
                        return "closed"
            except ConnectionError:
                return "closed"
            return "still open"

        trickled = asyncio.create_task(trickle())
        replies = await asyncio.gather(*(until_closed(reader) for reader, _ in held))
        for _, writer in held:
            writer.close()
        return replies, await trickled, peak, server.open_fds()

    replies, trickled, peak, after = asyncio.run(scenario())
    busy = [r for r in replies if r.startswith(b"HTTP/1.1 503")]
    assert all(b'"code":"TOO_MANY_CONNECTIONS"' in r for r in busy)
    assert all(r == b"" for r in replies if r not in busy)  # closed at the deadline, no reply
    assert peak - fds_before <= MAX_CONNECTIONS + 1
    assert trickled == "closed"
    assert after - fds_before < 5
    with httpx.Client(base_url=server.url, headers=auth(HONEST), timeout=30) as http:
        assert http.get("/schema").status_code == 200


def test_one_address_cannot_hold_every_connection_slot(server: Any) -> None:
    """One address opens 40 silent connections and reopens each as the server closes it, for
    4 s (four header deadlines); meanwhile a client with a token, from another address, asks
    30 times. Each ask is served: the flooding address holds at most its own cap, and its
    connections beyond it are answered 503 `TOO_MANY_CONNECTIONS_FROM_ADDRESS` at once. Before,
    such a flood kept the client out 29 times in 30."""
    host, port = address(server.url)
    flooder = ("127.0.0.6", 0)

    async def flood(stop: asyncio.Event, refusals: list[bytes]) -> None:
        async def hold() -> None:
            while not stop.is_set():
                reader, writer = await asyncio.open_connection(host, port, local_addr=flooder)
                writer.write(b"GET /schema HTTP/1.1\r\nHost: x\r\n")  # never finished
                received = await until_closed(reader)
                if received:
                    refusals.append(received)
                writer.close()

        holders = [asyncio.create_task(hold()) for _ in range(40)]
        await stop.wait()
        for task in holders:
            task.cancel()
        await asyncio.gather(*holders, return_exceptions=True)

    async def scenario() -> tuple[list[int], list[bytes]]:
        stop, refusals = asyncio.Event(), []
        flooding = asyncio.create_task(flood(stop, refusals))
        await asyncio.sleep(0.5)  # the flood is holding its connections
        statuses = []
        async with httpx.AsyncClient(base_url=server.url, headers=auth(HONEST)) as http:
            for _ in range(30):
                statuses.append((await http.get("/schema", timeout=30)).status_code)
                await asyncio.sleep(0.1)
        stop.set()
        await flooding
        return statuses, refusals

    statuses, refusals = asyncio.run(scenario())
    assert statuses == [200] * 30
    assert refusals and all(b"TOO_MANY_CONNECTIONS_FROM_ADDRESS" in r for r in refusals)


def test_a_body_that_trickles_in_gets_408(server: Any) -> None:
    """Three bodies sent at a byte every 0.5 s get 408 `BODY_TIMEOUT` and the connection ends
    (before, they stayed open as long as the bytes kept coming)."""
    host, port = address(server.url)

    async def slow_body() -> bytes:
        reader, writer = await asyncio.open_connection(host, port)
        head = f"POST /step HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {HONEST}\r\n"
        writer.write(f"{head}Content-Type: application/json\r\nContent-Length: 99\r\n\r\n".encode())

        async def drip() -> None:
            for _ in range(100):
                writer.write(b" ")
                await writer.drain()
                await asyncio.sleep(0.5)

        dripping = asyncio.create_task(drip())
        try:
            return await until_closed(reader)
        finally:
            dripping.cancel()
            writer.close()

    async def three() -> list[bytes]:
        return await asyncio.gather(*(slow_body() for _ in range(3)))

    for reply in asyncio.run(three()):
        assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
        assert b'"code":"BODY_TIMEOUT"' in reply


def test_json_of_many_tiny_values_is_refused_before_it_is_parsed(server: Any) -> None:
    """15 MB bodies of `[{},{},...]` and `[0,0,...]` under the size limit (before: ~740 MB of
    RSS and 15-25 s each) and a message carrying 10,000 values are refused as `TOO_MANY_VALUES`
    with the server's memory flat; the WebSocket session goes on."""
    before = rss_mib(server.proc.pid)
    bodies = [b"[" + b",".join([b"{}"] * 5_000_000) + b"]", b"[" + b"0," * 7_500_000 + b"0]"]
    with httpx.Client(base_url=server.url, headers=auth(HONEST), timeout=60) as http:
        for body in bodies:
            assert 14 * MIB < len(body) < 16 * MIB
            response = http.post("/step", content=body, headers={"content-type": "x/json"})
            message = guard_error(response, 400, "TOO_MANY_VALUES")
            assert str(MAX_JSON_VALUES) in message
    assert rss_mib(server.proc.pid) - before < 40

    async def scenario() -> tuple[str, Any]:
        async with ws_connect(ws_url(server.url), additional_headers=auth(HONEST)) as ws:
            data = {"message": "x", "completion_tokens": 1, "extra": [0] * 10_000}
            await ws.send(json.dumps({"type": "step", "data": data}))
            refusal = await ws.recv()
            await ws.send('{"type": "reset", "data": {"task_index": 0}}')
            await ws.recv()
            await ws.send(json.dumps({"type": "step", "data": {"message": gold_reply(0)}}))
            return str(refusal), json.loads(await ws.recv())

    refusal, result = asyncio.run(scenario())
    assert json.loads(refusal)["data"]["code"] == "TOO_MANY_VALUES"
    assert result["data"]["observation"]["rewards"]["correct_answer"] == 1.0


def test_resets_beyond_a_clients_rate_are_refused_and_the_session_goes_on(server: Any) -> None:
    """One token floods resets over `/ws` and HTTP: after the burst each is refused with
    `RATE_LIMITED` (429 on HTTP), its session still answers, and another client's resets are
    not limited (before: every reset ran)."""

    async def flood() -> list[str]:
        codes = []
        async with ws_connect(ws_url(server.url), additional_headers=auth(FLOOD)) as ws:
            for _ in range(RESET_BURST + 3):
                await ws.send('{"type": "reset", "data": {"task_index": 0}}')
                reply = json.loads(await ws.recv())
                codes.append(reply["data"]["code"] if reply["type"] == "error" else "ok")
            await ws.send(json.dumps({"type": "step", "data": {"message": gold_reply(0)}}))
            result = json.loads(await ws.recv())
            codes.append(str(result["data"]["observation"]["rewards"]["correct_answer"]))
        return codes

    codes = asyncio.run(flood())
    assert codes == ["ok"] * RESET_BURST + ["RATE_LIMITED"] * 3 + ["1.0"]
    with httpx.Client(base_url=server.url, timeout=30) as http:
        message = guard_error(
            http.post("/reset", json={"task_index": 0}, headers=auth(FLOOD)), 429, "RATE_LIMITED"
        )
        assert "retry in" in message
        assert http.post("/reset", json={}, headers=auth(HONEST)).status_code == 200


def test_odd_messages_get_the_guards_errors_and_the_session_goes_on(server: Any) -> None:
    """`{"type": ["reset"]}` closed the session with "unhashable type: 'list'"; a 5,000-digit
    integer got FastAPI's error shape: both are one-line validation errors now."""
    huge = "1" * 5_000

    async def scenario() -> list[Any]:
        async with ws_connect(ws_url(server.url), additional_headers=auth(HONEST)) as ws:
            replies = []
            for raw in ('{"type": ["reset"]}', '{"type": "reset", "data": {"seed": ' + huge + "}}"):
                await ws.send(raw)
                replies.append(json.loads(await ws.recv()))
            await ws.send('{"type": "reset", "data": {"task_index": 2}}')
            await ws.recv()
            await ws.send(json.dumps({"type": "step", "data": {"message": gold_reply(2)}}))
            replies.append(json.loads(await ws.recv()))
            return replies

    listed, digits, result = asyncio.run(scenario())
    assert listed["data"] == {"message": "`type` must be a string", "code": "VALIDATION_ERROR"}
    assert digits["data"]["code"] == "VALIDATION_ERROR" and "digits" in digits["data"]["message"]
    assert result["data"]["observation"]["rewards"]["correct_answer"] == 1.0
    with httpx.Client(base_url=server.url, headers=auth(HONEST), timeout=30) as http:
        json_type = {"content-type": "application/json"}
        response = http.post("/reset", content='{"seed": ' + huge + "}", headers=json_type)
        assert "digits" in guard_error(response, 400, "VALIDATION_ERROR")
        # Bytes that are not UTF-8 are not JSON: the app says so, in the guard's shape.
        response = http.post("/reset", content=b'{"seed": "\xff"}', headers=json_type)
        assert "parsing the body" in guard_error(response, 400, "HTTP_ERROR")


def test_the_bearer_header_is_read_as_documented(server: Any) -> None:
    """The scheme in any case, one or more spaces, then the token exactly (a tab before it was
    stripped and accepted before)."""
    accepted = [f"bearer {HONEST}", f"BEARER   {HONEST}"]
    refused = [f"Bearer \t{HONEST}", f"Bearer\t{HONEST}", f"Bearer {HONEST} x", f"Token {HONEST}"]
    refused.append(f"Bearer {HONEST[:-1]}")
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for header in accepted:
            assert http.get("/schema", headers={"Authorization": header}).status_code == 200
        for header in refused:
            response = http.get("/schema", headers={"Authorization": header})
            guard_error(response, 401, "UNAUTHORIZED")


def test_start_up_warns_about_a_token_file_open_to_others_and_names_the_limits(
    server: Any,
) -> None:
    lines = server.log.read_text().splitlines()
    assert lines[0].startswith("warning: the token file ")
    assert lines[0].endswith("is open to other users (mode 0644); chmod 600 it")
    for part in ("json_values=1000", "header_timeout=1s", "body_timeout=2s", "connections=40"):
        assert part in lines[1]
    assert "trusted_proxies=none" in lines[1] and "resets/client=0.2/s burst 5" in lines[1]


def test_forwarded_addresses_name_a_client_only_from_a_trusted_proxy(open_server: Any) -> None:
    """Without tokens a client is its address. From 127.0.0.1, `X-Forwarded-For` is ignored,
    so a client naming a new address for each session still gets two (before, uvicorn believed
    it from loopback and one client took every slot); from 127.0.0.2, the configured proxy,
    each forwarded address is a client of its own."""

    async def sessions(source: str) -> list[str]:
        outcomes, held = [], []
        for n in range(3):
            headers = {"X-Forwarded-For": f"10.0.0.{n + 1}"}
            ws = await ws_connect(
                ws_url(open_server.url), additional_headers=headers, local_addr=(source, 0)
            )
            held.append(ws)
            try:
                await ws.send('{"type": "reset", "data": {"task_index": 0}}')
                reply = json.loads(await ws.recv())
                outcomes.append(reply["data"]["code"] if reply["type"] == "error" else "ok")
            except ConnectionClosed as closed:  # refused and closed before the reset was sent
                outcomes.append(f"close {closed.rcvd.code if closed.rcvd else None}")
        for ws in held:
            await ws.close()
        return ["limited" if o in ("CLIENT_SESSION_LIMIT", "close 1013") else o for o in outcomes]

    assert asyncio.run(sessions("127.0.0.1")) == ["ok", "ok", "limited"]
    time.sleep(0.5)  # the sessions above release their slots
    assert asyncio.run(sessions("127.0.0.2")) == ["ok", "ok", "ok"]


def test_limit_flags_must_be_positive_and_proxies_addresses(start_failure: Any) -> None:
    from gsm8k_multireward.openenv.server.app import main

    flags = ("--header-timeout", "--body-timeout", "--max-connections", "--max-json-values")
    for flag in (*flags, "--max-connections-per-address"):
        message = start_failure(main, ["--data", str(FIXTURE), flag, "0"], {})
        assert f"{flag} must be positive" in message
    message = start_failure(main, ["--data", str(FIXTURE), "--trusted-proxies", "proxy.lan"], {})
    assert "'proxy.lan' is not an IP address or network" in message
