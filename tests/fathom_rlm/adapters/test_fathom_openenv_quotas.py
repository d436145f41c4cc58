"""fathom-rlm's OpenEnv server as a shared service: the server command on 127.0.0.1 with two bearer
tokens (two clients) and an endpoint key, `llm` sub-calls going to the scripted policy server. A
session's endpoint-token budget and its client's sub-call and endpoint-token quotas hold (a new
session gets no new budget), a refused sub-call is an `Error:` output and the episode goes on, a
session past its maximum life is closed while active, and clients without a token never reach a
session. Start-up refuses a key without a token and a bad endpoint URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import TYPE_CHECKING, Any

import pytest
from fathom_rlm.agent import RolloutCaps
from fathom_rlm.agent.prompts import reader_message, reader_system_prompt
from fathom_rlm.openenv import FathomAction, FathomEnvClient
from fathom_rlm.openenv.server.app import main
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

if TYPE_CHECKING:
    from fathom_rlm.documents import TaskRecord

TOKEN = "fathom-test-token-0123456789"
OTHER_TOKEN = "fathom-other-client-token-0123456789"
CLIENT_SUB_CALLS = 3
SESSION_LIFE_S = 4.0
SLICE = "0:1200"
LONG_SLICE = "0:3200"
PROMPT = "Who founded the company?"

pytestmark = [pytest.mark.timeout(300), pytest.mark.xdist_group("test_fathom_openenv_quotas")]


def tokens_per_sub_call(document_text: str, slice_: str = SLICE) -> int:
    """What the server estimates for one plain sub-call's prompt over `slice_` (characters / 4;
    it reserves 8 more for the completion and settles at the reply's characters / 4, a few
    tokens, since the scripted policy reports no usage)."""
    start, end = (int(x) for x in slice_.split(":"))
    request = [
        {"content": reader_system_prompt(RolloutCaps())},
        reader_message(PROMPT, document_text[start:end]),
    ]
    return sum(len(str(m["content"])) for m in request) // 4


@pytest.fixture(scope="module")
def charges(eval_rows: list[TaskRecord]) -> dict[str, int]:
    """Token charges of the sub-calls the tests make, and the budgets set from them: a session
    holds two plain sub-calls, a client four (the three plain ones the first test's client makes
    fit; two long ones do not)."""
    from fathom_rlm.adapters.scoring import document_text

    document = asyncio.run(document_text(eval_rows[0]))
    plain, long = tokens_per_sub_call(document), tokens_per_sub_call(document, LONG_SLICE)
    session, client = int(plain * 2.5), plain * 4
    assert 3 * plain <= client and long <= session and long <= client < 2 * long
    return {"long": long, "session": session, "client": client}


@pytest.fixture(scope="module")
def server(
    module_openenv_server: Any,
    policy_url: str,
    charges: dict[str, int],
    tmp_path_factory: pytest.TempPathFactory,
) -> Any:
    tokens = tmp_path_factory.mktemp("tokens") / "tokens.txt"
    tokens.write_text(f"{OTHER_TOKEN}\n")  # beside $OPENENV_TOKEN: a second client
    return module_openenv_server(
        [
            "fathom_rlm.openenv.server.app",
            *("--llm-base-url", policy_url, "--llm-model", "fathom-reference"),
            *("--llm-api-key-var", "FATHOM_ENDPOINT_KEY", "--max-depth", "1"),
            *("--doc-tokens", "16000", "--num-examples", "1", "--token-file", str(tokens)),
            *("--client-sub-calls", str(CLIENT_SUB_CALLS), "--sub-max-completion-tokens", "8"),
            *("--client-endpoint-tokens", str(charges["client"])),
            *("--session-endpoint-tokens", str(charges["session"])),
            *("--max-session-life", str(SESSION_LIFE_S)),
        ],
        OPENENV_TOKEN=TOKEN,
        FATHOM_ENDPOINT_KEY="endpoint-key",
    )


async def sub_calls(env: FathomEnvClient, count: int, slice_: str = SLICE) -> list[str]:
    outputs = []
    for _ in range(count):
        result = await env.step(FathomAction(tool="llm", prompt=PROMPT, slice=slice_))
        outputs.append(result.observation.output)
    return outputs


def test_session_and_client_quotas_hold_and_the_episode_goes_on(server: Any) -> None:
    async def scenario() -> tuple[list[str], str, list[str], Any]:
        async with FathomEnvClient(server.url, token=TOKEN) as first:
            await first.reset(task_index=0)
            outputs = await sub_calls(first, 3)
            code = await first.step(FathomAction(tool="repl", code="print(len(doc) > 0)"))
            repl = code.observation.output
        async with FathomEnvClient(server.url, token=TOKEN) as second:
            await second.reset(task_index=0)  # a new session: its own budget, the same client
            later = await sub_calls(second, 2)
            final = await second.step(FathomAction(tool="answer", message="<answer>x</answer>"))
        return outputs, repl, later, final

    outputs, repl, later, final = asyncio.run(scenario())
    assert not outputs[0].startswith("Error:") and not outputs[1].startswith("Error:")
    assert outputs[2].startswith("Error: this session's endpoint-token budget")
    assert "True" in repl  # the session went on after the refusal
    assert not later[0].startswith("Error:")  # the client's third sub-call
    assert later[1].startswith("Error: this client's sub-call quota (3 per 3600 s)")
    assert final.done and "correctness" in final.observation.rewards


def test_the_client_endpoint_token_quota_holds_and_the_episode_goes_on(
    server: Any, charges: dict[str, int]
) -> None:
    """A second client's long sub-calls: one fits its endpoint-token quota, the next (in a new
    session, so the session budget is not what refuses it) does not; it is not sent, the model
    sees why, and that session still runs code and takes an answer."""
    client = charges["client"]

    async def scenario() -> tuple[list[str], list[str], str, Any]:
        async with FathomEnvClient(server.url, token=OTHER_TOKEN) as first:
            await first.reset(task_index=0)
            allowed = await sub_calls(first, 1, LONG_SLICE)
        async with FathomEnvClient(server.url, token=OTHER_TOKEN) as second:
            await second.reset(task_index=0)
            refused = await sub_calls(second, 1, LONG_SLICE)
            code = await second.step(FathomAction(tool="repl", code="print(len(doc) > 0)"))
            final = await second.step(FathomAction(tool="answer", message="<answer>x</answer>"))
        return allowed, refused, code.observation.output, final

    allowed, refused, repl, final = asyncio.run(scenario())
    assert not allowed[0].startswith("Error:")
    assert refused[0].startswith(
        f"Error: this client's endpoint-token quota ({client} per 3600 s) is used up;"
    )
    assert "True" in repl  # the session went on after the refusal
    assert final.done and "correctness" in final.observation.rewards


def test_a_session_past_its_maximum_life_is_closed_while_active(server: Any) -> None:
    """A session that steps every 0.2 s (a new episode whenever one ends at its turn cap) is
    closed after --max-session-life with SESSION_LIFE and close code 4410, not as idle; the
    client can then open a new session and finish an episode."""
    ws_url = server.url.replace("http", "ws") + "/ws"
    reset = '{"type": "reset", "data": {"task_index": 0}}'
    step = json.dumps({"type": "step", "data": {"tool": "repl", "code": "print(6 * 7)"}})

    async def active_session() -> tuple[float, float, int, dict[str, Any], int | None]:
        started = time.monotonic()
        last_answered, answered, message = 0.0, 0, reset
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with ws_connect(ws_url, additional_headers=headers) as ws:
            while time.monotonic() - started < SESSION_LIFE_S + 20:
                # Closed while pausing: its notice is still there to be read.
                with contextlib.suppress(ConnectionClosed):
                    await ws.send(message)
                reply = json.loads(await ws.recv())
                if reply["type"] == "error":
                    with pytest.raises(ConnectionClosed) as closed:
                        await ws.recv()
                    code = closed.value.rcvd.code if closed.value.rcvd else None
                    return time.monotonic() - started, last_answered, answered, reply, code
                data = reply["data"]
                assert message == reset or data["done"] or "42" in data["observation"]["output"]
                message = reset if data["done"] else step
                last_answered, answered = time.monotonic() - started, answered + 1
                await asyncio.sleep(0.2)
        raise AssertionError(f"still open after {SESSION_LIFE_S + 20:g} s")

    async def new_session() -> Any:
        async with FathomEnvClient(server.url, token=TOKEN) as env:
            await env.reset(task_index=0)
            return await env.step(FathomAction(tool="answer", message="<answer>x</answer>"))

    closed_at, last_answered, answered, notice, code = asyncio.run(active_session())
    assert notice["data"]["code"] == "SESSION_LIFE", notice
    assert code == 4410
    assert closed_at >= SESSION_LIFE_S  # not before its life was over
    assert answered >= 3 and last_answered >= SESSION_LIFE_S / 2  # active until near the end
    final = asyncio.run(new_session())
    assert final.done and "correctness" in final.observation.rewards


def test_clients_without_the_token_never_reach_a_session(server: Any) -> None:
    async def attempt(token: str | None) -> None:
        async with FathomEnvClient(server.url, token=token) as env:
            await env.reset(task_index=0)

    for token in (None, "x" * 30):
        with pytest.raises(ConnectionError, match="403"):
            asyncio.run(attempt(token))


@pytest.mark.parametrize(
    ("argv", "environ", "message"),
    [
        (["--llm-base-url", "localhost:8001/v1"], {}, "--llm-base-url must be an http(s) URL"),
        (["--llm-base-url", "http://127.0.0.1:x/v1"], {}, "--llm-base-url has a bad port"),
        (["--llm-api-key-var", "K"], {"K": "key"}, "--llm-api-key-var needs a bearer token"),
        (["--llm-api-key-var", "UNSET_K"], {}, "names UNSET_K, which is not set"),
        (["--host", "0.0.0.0"], {}, "0.0.0.0 is beyond loopback and no bearer token is set"),
        (["--max-sub-calls", "-1"], {}, "max_sub_calls and max_depth must be >= 0"),
    ],
)
def test_configuration_errors_fail_at_start_in_one_line(
    argv: list[str], environ: dict[str, str], message: str, start_failure: Any
) -> None:
    base = ["--llm-base-url", "http://127.0.0.1:1/v1", "--llm-model", "m"]
    assert message in start_failure(main, [*base, *argv], {"UNSET_K": "", **environ})
