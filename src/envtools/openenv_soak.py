"""A soak of the gsm8k-multireward OpenEnv server on a shared network: many honest sessions
(reset, then the gold reply as the answer, which must score 1) while hostile clients run
alongside them: no token, a wrong token, 200 MB bodies, 5,000-deep JSON, JSON of 100,000
values, bad arguments, oversized WebSocket messages, `/mcp` session spam, sessions left idle,
and episodes dropped midway. It passes when no honest session fails and every hostile attempt
is refused as it should be.

    uv run python -m envtools.openenv_soak --data PATH/TO/gsm8k.jsonl --sessions 500

starts the server itself (two bearer tokens, one per side) on a free loopback port;
`run_soak` drives a server that is already running (the tests use it).

    uv run python -m envtools.openenv_soak --latency --env fathom-rlm --rounds 3

measures instead how long another session's round trips take (a `state` message, every 20 ms)
while one client floods resets (three `/ws` sessions and HTTP `/reset`, as fast as the replies
come), and while a second session sends 15 MB messages (gsm8k-multireward: a reply, graded;
fathom-rlm: an answer, refused by its size limit), against either server with its default
limits; `--data` is needed for gsm8k.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from envtools import cli

if TYPE_CHECKING:
    from gsm8k_multireward.openenv import Gsm8kEnvClient

HONEST = "soak-honest-token-0123456789"
HOSTILE = "soak-hostile-token-0123456789"


def _client(url: str, token: str) -> Gsm8kEnvClient:
    """The typed client; openenv-core (and the gradio it imports, ~6 s) loads only once a soak
    runs, so a bad argument is reported at once."""
    from gsm8k_multireward.openenv import Gsm8kEnvClient

    return Gsm8kEnvClient(url, token=token)


def gold_replies(data: Path) -> list[str]:
    rows = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    return [f"So the answer is \\boxed{{{r['answer'].split('####')[-1].strip()}}}." for r in rows]


async def honest_session(url: str, index: int, replies: list[str]) -> float:
    """One honest episode; its wall time. Raises if anything about it is wrong."""
    from gsm8k_multireward.openenv import Gsm8kAction  # loaded by `_client` already

    started = time.perf_counter()
    async with _client(url, HONEST) as env:
        await env.reset(task_index=index % len(replies))
        result = await env.step(Gsm8kAction(message=replies[index % len(replies)]))
    if not result.done or result.observation.rewards["correct_answer"] != 1.0:
        raise AssertionError(f"honest session {index} scored {result.observation}")
    return time.perf_counter() - started


def _ws(url: str) -> str:
    return url.replace("http://", "ws://") + "/ws"


async def _refused_handshake(url: str, token: str | None) -> str:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    try:
        async with ws_connect(_ws(url), additional_headers=headers):
            return "accepted"
    except InvalidStatus as exc:
        return f"http {exc.response.status_code}"


async def _ws_reply(url: str, raw: str) -> str:
    """Send one raw message in a hostile session; the error code it gets back."""
    async with ws_connect(
        _ws(url), additional_headers={"Authorization": f"Bearer {HOSTILE}"}
    ) as ws:
        await ws.send(raw)
        return json.loads(await ws.recv())["data"].get("code", "none")


async def _oversized_message(url: str) -> str:
    headers = {"Authorization": f"Bearer {HOSTILE}"}
    async with ws_connect(_ws(url), additional_headers=headers, max_size=None) as ws:
        try:
            await ws.send('{"type": "step", "data": {"message": "' + "x" * (17 << 20) + '"}}')
            await ws.recv()
        except ConnectionClosed as exc:
            return f"close {exc.rcvd.code if exc.rcvd else None}"
    return "not closed"


async def _http(url: str, token: str, path: str, **kwargs: Any) -> str:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        response = await http.post(path, headers={"Authorization": f"Bearer {token}"}, **kwargs)
        return f"http {response.status_code}"


async def _declared_200_mb(url: str) -> str:
    """POST /step declaring a 200 MB body and starting to send it; the status it gets."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        head = f"POST /step HTTP/1.1\r\nHost: {host}\r\nContent-Length: {200 << 20}\r\n"
        writer.write(f"{head}Authorization: Bearer {HOSTILE}\r\n\r\n".encode() + b"x" * (1 << 20))
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        status = (await reader.readline()).split()
        return f"http {status[1].decode()}" if len(status) > 1 else "no reply"
    finally:
        writer.close()


async def _idle_hog(url: str, idle_s: float) -> str:
    env = _client(url, HOSTILE)
    try:
        await env.reset(task_index=0)
        await asyncio.sleep(idle_s)
        await env.reset(task_index=0)
        return "still open"
    except (ConnectionClosed, RuntimeError) as exc:
        return "closed" if "IDLE" in str(exc) or isinstance(exc, ConnectionClosed) else str(exc)
    except Exception as exc:
        return "closed" if isinstance(exc.__cause__, ConnectionClosed) else repr(exc)[:80]
    finally:
        with contextlib.suppress(Exception):
            await env.close()


async def _session_flood(url: str, count: int = 40) -> str:
    """Hold `count` sessions open at once under one token: the per-client limit must refuse
    some of them."""
    clients = [_client(url, HOSTILE) for _ in range(count)]
    try:
        results = await asyncio.gather(
            *(c.reset(task_index=0) for c in clients), return_exceptions=True
        )
    finally:
        await asyncio.gather(*(c.close() for c in clients), return_exceptions=True)
    return "limited" if any(isinstance(r, Exception) for r in results) else "all accepted"


async def _dropped_episode(url: str) -> str:
    env = _client(url, HOSTILE)
    await env.reset(task_index=1)
    assert env._ws is not None
    env._ws.transport.abort()  # gone without a close frame
    return "dropped"


def hostile_attempts(url: str, idle_s: float) -> list[tuple[str, Any, set[str]]]:
    """(name, coroutine factory, the outcomes that count as refused) for each hostile kind."""
    create = {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 1}
    deep = '{"type": "step", "data": ' + "[" * 5_000 + "]" * 5_000 + "}"
    many = '{"type": "step", "data": {"message": "x", "extra": [' + "{}," * 100_000 + "{}]}}"
    return [
        ("no token", lambda: _refused_handshake(url, None), {"http 403"}),
        ("wrong token", lambda: _http(url, "wrong-token-0123456789xx", "/reset"), {"http 401"}),
        ("200 MB body", lambda: _declared_200_mb(url), {"http 413"}),
        ("deep JSON", lambda: _ws_reply(url, deep), {"TOO_DEEP"}),
        ("many JSON values", lambda: _ws_reply(url, many), {"TOO_MANY_VALUES"}),
        (
            "bad reset",
            lambda: _ws_reply(url, '{"type": "reset", "data": {"seed": -5}}'),
            {"VALIDATION_ERROR"},
        ),
        ("17 MB message", lambda: _oversized_message(url), {"close 1009"}),
        ("/mcp session", lambda: _http(url, HOSTILE, "/mcp", json=create), {"http 404"}),
        ("idle hog", lambda: _idle_hog(url, idle_s + 1.5), {"closed"}),
        ("dropped episode", lambda: _dropped_episode(url), {"dropped"}),
        ("session flood", lambda: _session_flood(url), {"limited"}),
    ]


async def run_soak(
    url: str, data: Path, sessions: int, concurrency: int, hostile_every: int, idle_s: float
) -> dict[str, Any]:
    """`sessions` honest episodes, `concurrency` at a time, and one hostile attempt (in turn
    through every kind, `concurrency` at a time) per `hostile_every` of them. A hostile session
    refused by the per-client session limit counts as refused too."""
    replies = gold_replies(data)
    kinds = hostile_attempts(url, idle_s)
    slots, hostile_slots = asyncio.Semaphore(concurrency), asyncio.Semaphore(concurrency)
    honest_failures: list[str] = []
    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    wrong: list[str] = []

    async def honest(index: int) -> None:
        async with slots:
            try:
                latencies.append(await honest_session(url, index, replies))
            except Exception as exc:
                honest_failures.append(f"{index}: {type(exc).__name__}: {exc}"[:300])

    async def hostile(number: int) -> None:
        name, attempt, refused = kinds[number % len(kinds)]
        async with hostile_slots:
            try:
                outcome = await attempt()
            except Exception as exc:
                outcome = f"{type(exc).__name__}: {exc}"[:120]
        if any(mark in outcome for mark in ("CLIENT_SESSION_LIMIT", "1013", "http 429")):
            outcome = refused_by_limit = "session limit"
            refused = {refused_by_limit}
        outcomes[f"{name}: {outcome}"] += 1
        if outcome not in refused:
            wrong.append(f"{name}: {outcome}")

    started = time.perf_counter()
    work = [honest(i) for i in range(sessions)]
    work += [hostile(n) for n in range(sessions // hostile_every)]
    await asyncio.gather(*work)
    return {
        "honest_sessions": sessions,
        "honest_failed": len(honest_failures),
        "honest_failures": honest_failures[:5],
        "honest_p50_s": round(statistics.median(latencies), 3) if latencies else None,
        "honest_max_s": round(max(latencies), 3) if latencies else None,
        "hostile_attempts": sum(outcomes.values()),
        "hostile_not_refused": wrong[:5],
        "hostile_outcomes": dict(sorted(outcomes.items())),
        "wall_s": round(time.perf_counter() - started, 1),
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


PING_EVERY_S = 0.02
BIG_MESSAGE_CHARS = 15_000_000


async def _round_trips(ws: Any, busy: asyncio.Future[Any]) -> list[float]:
    """A `state` round trip every `PING_EVERY_S` until `busy` is done; their times."""
    times = []
    while not busy.done():
        started = time.perf_counter()
        await ws.send('{"type": "state"}')
        await ws.recv()
        times.append(time.perf_counter() - started)
        await asyncio.sleep(PING_EVERY_S)
    return times


def _summary(times: list[float]) -> dict[str, Any]:
    times = sorted(times)
    if not times:
        return {"round_trips": 0}

    def ms(q: float) -> float:
        return round(1000 * times[int(q * (len(times) - 1))], 1)

    return {"round_trips": len(times), "p50_ms": ms(0.5), "p95_ms": ms(0.95), "max_ms": ms(1.0)}


async def _reset_flood(url: str, token: str, seconds: float) -> Counter[str]:
    """Resets from one client for `seconds`: three `/ws` sessions and HTTP `/reset`, each as
    fast as its replies come; the outcomes by kind."""
    outcomes: Counter[str] = Counter()
    headers = {"Authorization": f"Bearer {token}"}
    deadline = time.monotonic() + seconds

    async def over_ws() -> None:
        async with ws_connect(_ws(url), additional_headers=headers) as ws:
            while time.monotonic() < deadline:
                await ws.send('{"type": "reset", "data": {"task_index": 0}}')
                reply = json.loads(await ws.recv())
                outcomes[reply["data"].get("code", "?") if reply["type"] == "error" else "ok"] += 1

    async def over_http() -> None:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
            while time.monotonic() < deadline:
                response = await http.post("/reset", json={"task_index": 0})
                outcomes["ok" if response.is_success else f"http {response.status_code}"] += 1

    await asyncio.gather(over_ws(), over_ws(), over_ws(), over_http())
    return outcomes


async def _big_message(url: str, token: str, env: str, reply: str) -> str:
    """One 15 MB step after a reset; what came back (`done`, or the error code)."""
    headers = {"Authorization": f"Bearer {token}"}
    filler = "We add the parts one by one and check the sum again. " * (BIG_MESSAGE_CHARS // 54 + 1)
    if env == "fathom-rlm":
        data = {"tool": "answer", "message": filler + "<answer>x</answer>"}
    else:
        data = {"message": filler + reply}
    text = json.dumps({"type": "step", "data": data})
    async with ws_connect(_ws(url), additional_headers=headers, max_size=None) as ws:
        await ws.send('{"type": "reset", "data": {"task_index": 0}}')
        await ws.recv()
        await ws.send(text)
        answer = json.loads(await ws.recv())
    return answer["data"].get("code", "?") if answer["type"] == "error" else "done"


def _flood_process(url: str, seconds: float) -> Counter[str]:
    return asyncio.run(_reset_flood(url, HOSTILE, seconds))


def _big_message_process(url: str, env: str, reply: str) -> str:
    return asyncio.run(_big_message(url, HONEST, env, reply))


async def measure_latency(
    url: str, env: str, reply: str, rounds: int, flood_s: float
) -> dict[str, Any]:
    """Another session's round trips: idle, during a reset flood, and during 15 MB messages
    (`rounds` of each, one after another), after one untimed episode. The load runs in a
    process of its own, so building and sending it does not delay the round trips measured
    here."""
    result: dict[str, Any] = {"load_before": [round(x, 2) for x in os.getloadavg()]}
    headers = {"Authorization": f"Bearer {HONEST}"}
    loop = asyncio.get_running_loop()
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as load:
        await loop.run_in_executor(load, time.sleep, 0)  # started before anything is timed
        async with ws_connect(_ws(url), additional_headers=headers) as ws:
            # An untimed episode first: the server starts its graders on the first one.
            data = (
                {"tool": "answer", "message": "<answer>x</answer>"}
                if env == "fathom-rlm"
                else {"message": reply}
            )
            for message in (
                {"type": "reset", "data": {"task_index": 0}},
                {"type": "step", "data": data},
            ):
                await ws.send(json.dumps(message))
                await ws.recv()
            idle = asyncio.ensure_future(asyncio.sleep(2))
            result["idle"] = _summary(await _round_trips(ws, idle))
            flood_times: list[float] = []
            floods: Counter[str] = Counter()
            big_times: list[float] = []
            big: Counter[str] = Counter()
            for _ in range(rounds):
                work = loop.run_in_executor(load, _flood_process, url, flood_s)
                flood_times += await _round_trips(ws, work)
                floods += work.result()
                work = loop.run_in_executor(load, _big_message_process, url, env, reply)
                big_times += await _round_trips(ws, work)
                big[work.result()] += 1
    result["reset_flood"] = {**_summary(flood_times), "resets": dict(floods)}
    result["big_messages"] = {**_summary(big_times), "outcomes": dict(big)}
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return result


def main(argv: list[str] | None = None) -> int:
    parser = cli.ArgumentParser(prog="python -m envtools.openenv_soak", description=__doc__)
    parser.add_argument("--data", type=Path, default=None, help="gsm8k JSONL")
    parser.add_argument(
        "--latency", action="store_true", help="measure round trips under load instead"
    )
    parser.add_argument(
        "--env", choices=("gsm8k-multireward", "fathom-rlm"), default="gsm8k-multireward"
    )
    parser.add_argument("--rounds", type=cli.integer(1), default=3, help="--latency: rounds")
    parser.add_argument(
        "--flood-seconds", type=cli.number(0.1), default=3.0, help="--latency: per flood"
    )
    parser.add_argument(
        "--reset-rate",
        type=cli.number(0.001),
        default=None,
        help="the server's --client-reset-rate (default: its own)",
    )
    parser.add_argument("--sessions", type=cli.integer(1), default=500, help="honest sessions")
    parser.add_argument(
        "--concurrency", type=cli.integer(1), default=24, help="honest sessions at once"
    )
    parser.add_argument(
        "--hostile-every", type=cli.integer(1), default=2, help="one hostile attempt per N"
    )
    parser.add_argument(
        "--idle-timeout", type=cli.number(0.001), default=5.0, help="the server's (s)"
    )
    args = parser.parse_args(argv)
    if args.env == "gsm8k-multireward":
        parser.require_file("--data", args.data, "a gsm8k JSONL file")
        command = ["gsm8k_multireward.openenv.server.app", "--data", str(args.data)]
    elif not args.latency:
        parser.reject("--env", "gsm8k-multireward for the soak", args.env)
    else:  # resets and answers only: the sub-call endpoint is never reached
        command = ["fathom_rlm.openenv.server.app", "--llm-base-url", "http://127.0.0.1:9/v1"]
        command += ["--llm-model", "none", "--doc-tokens", "16000", "--num-examples", "4"]
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        tokens.write_text(f"{HONEST}\n{HOSTILE}\n")
        tokens.chmod(0o600)
        log = open(Path(tmp) / "server.log", "w")  # noqa: SIM115 - closed with the server
        server = subprocess.Popen(
            [
                *(sys.executable, "-m", *command),
                *("--port", str(port), "--token-file", str(tokens)),
                *("--max-sessions", "64", "--idle-timeout", str(args.idle_timeout)),
                *(("--client-reset-rate", str(args.reset_rate)) if args.reset_rate else ()),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
        )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_healthy(url, server)
            if args.latency:
                reply = gold_replies(args.data)[0] if args.data else ""
                latency = measure_latency(url, args.env, reply, args.rounds, args.flood_seconds)
                print(json.dumps(asyncio.run(latency), indent=2))
                return 0
            result = asyncio.run(
                run_soak(
                    url,
                    args.data,
                    args.sessions,
                    args.concurrency,
                    args.hostile_every,
                    args.idle_timeout,
                )
            )
        finally:
            server.terminate()
            server.wait(timeout=60)
            log.close()
    print(json.dumps(result, indent=2))
    return 1 if result["honest_failed"] or result["hostile_not_refused"] else 0


def _wait_healthy(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise SystemExit("the server did not come up")


if __name__ == "__main__":
    sys.exit(main())
