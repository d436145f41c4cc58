"""fathom-rlm's OpenEnv server as a shared service: the server command on 127.0.0.1 with a bearer
token and an endpoint key, `llm` sub-calls going to the scripted policy server. A session's
endpoint-token budget and its client's sub-call quota hold (a new session gets no new budget),
a refused sub-call is an `Error:` output and the episode goes on, and clients without the token
never reach a session. Start-up refuses a key without a token and a bad endpoint URL.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fathom_rlm.adapters.openenv import main
from fathom_rlm.agent import RolloutCaps
from fathom_rlm.agent.prompts import reader_message, reader_system_prompt
from openenv_guard.client import TokenEnvClient

TOKEN = "fathom-test-token-0123456789"
CLIENT_SUB_CALLS = 3
SLICE = "0:1200"
PROMPT = "Who founded the company?"

pytestmark = [pytest.mark.timeout(300), pytest.mark.xdist_group("test_fathom_openenv_quotas")]


def tokens_per_sub_call(document_text: str) -> int:
    """What the server charges for one plain sub-call over SLICE (characters / 4)."""
    start, end = (int(x) for x in SLICE.split(":"))
    request = [
        {"content": reader_system_prompt(RolloutCaps())},
        reader_message(PROMPT, document_text[start:end]),
    ]
    return sum(len(str(m["content"])) for m in request) // 4


@pytest.fixture(scope="module")
def server(module_openenv_server: Any, policy_url: str, eval_rows: list) -> Any:
    from fathom_rlm.adapters.scoring import document_text

    per_call = tokens_per_sub_call(asyncio.run(document_text(eval_rows[0])))
    return module_openenv_server(
        [
            "fathom_rlm.adapters.openenv",
            *("--llm-base-url", policy_url, "--llm-model", "fathom-reference"),
            *("--llm-api-key-var", "FATHOM_ENDPOINT_KEY", "--max-depth", "1"),
            *("--doc-tokens", "16000", "--num-examples", "1"),
            *("--client-sub-calls", str(CLIENT_SUB_CALLS)),
            *("--session-endpoint-tokens", str(int(per_call * 2.5))),
        ],
        OPENENV_TOKEN=TOKEN,
        FATHOM_ENDPOINT_KEY="endpoint-key",
    )


async def sub_calls(env: Any, count: int) -> list[str]:
    outputs = []
    for _ in range(count):
        result = await env.step({"tool": "llm", "prompt": PROMPT, "slice": SLICE})
        outputs.append(result.observation["output"])
    return outputs


def test_session_and_client_quotas_hold_and_the_episode_goes_on(server: Any) -> None:
    async def scenario() -> tuple[list[str], str, list[str], Any]:
        async with TokenEnvClient(server.url, token=TOKEN) as first:
            await first.reset(task_index=0)
            outputs = await sub_calls(first, 3)
            code = await first.step({"tool": "repl", "code": "print(len(doc) > 0)"})
            repl = code.observation["output"]
        async with TokenEnvClient(server.url, token=TOKEN) as second:
            await second.reset(task_index=0)  # a new session: its own budget, the same client
            later = await sub_calls(second, 2)
            final = await second.step({"tool": "answer", "message": "<answer>x</answer>"})
        return outputs, repl, later, final

    outputs, repl, later, final = asyncio.run(scenario())
    assert not outputs[0].startswith("Error:") and not outputs[1].startswith("Error:")
    assert outputs[2].startswith("Error: this session's endpoint-token budget")
    assert "True" in repl  # the session went on after the refusal
    assert not later[0].startswith("Error:")  # the client's third sub-call
    assert later[1].startswith("Error: this client's sub-call quota (3 per 3600 s)")
    assert final.done and "correctness" in final.observation["rewards"]


def test_clients_without_the_token_never_reach_a_session(server: Any) -> None:
    async def attempt(token: str | None) -> None:
        async with TokenEnvClient(server.url, token=token) as env:
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
