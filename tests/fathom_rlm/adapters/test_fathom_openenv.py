"""fathom-rlm over OpenEnv: the server command on 127.0.0.1, driven by the environment's typed
client (`FathomEnvClient`, an openenv-core `EnvClient`) and, for malformed actions, by
openenv-core's generic client.

* A scripted episode (the reference policy called in the test, its tool calls sent as actions,
  its `llm` sub-calls made by the server to the scripted policy server) gets the reward and every
  component and metric that the in-process loop computes for the same rollout.
* Bad actions get clear errors: mistakes of the model come back as "Error: ..." observations and
  the episode goes on; protocol misuse (step before reset, after the end, wrong types) is
  refused by the server with a message naming the problem.
* 32 concurrent sessions, some disconnecting mid-episode, leave no sandbox process or directory
  behind; stopping the server leaves nothing at all.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from fathom_lab.ladder.overlap_reader import reading_any_text
from fathom_rlm.agent.turns import normalize_assistant
from fathom_rlm.openenv import FathomAction, FathomEnvClient, FathomObservation, FathomState
from fathom_rlm.rewards import COMPONENT_NAMES, METRIC_NAMES, REWARD_NAME, TIMING_NAMES
from fathom_rlm.userdata import task_question
from openenv.core.generic_client import GenericEnvClient

from envtools.openenv_play import estimated_usage
from envtools.policies.registry import get_policy

if TYPE_CHECKING:
    from fathom_rlm.documents import TaskRecord

POLICY = "fathom-reference"
NUM_EXAMPLES = 3

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),
    pytest.mark.xdist_group("test_fathom_openenv"),
]


@pytest.fixture(scope="module")
def server(module_openenv_server: Any, kit: Any, policy_url: str) -> Any:
    """`python -m fathom_rlm.openenv.server.app` on a free loopback port, shared by this module's
    tests (each test's sessions end before the next starts)."""
    return module_openenv_server(
        [
            "fathom_rlm.openenv.server.app",
            *("--llm-base-url", policy_url, "--llm-model", POLICY),
            *("--doc-tokens", str(kit.doc_tokens), "--num-examples", str(NUM_EXAMPLES)),
        ],
    )


def untimed(scores: dict[str, float], names: Any = None) -> dict[str, float]:
    """The scores (of `names`, default all) without the timings no replay reproduces."""
    return {k: scores[k] for k in (names or scores) if k not in TIMING_NAMES}


def sandboxes(server: Any) -> list[str]:
    """Sandbox workers alive under the server (its fork server's children)."""
    return [cmd for ppid, cmd in server.processes().values() if ppid != server.proc.pid]


def sandbox_dirs(server: Any) -> list[str]:
    return sorted(p.name for p in server.tmp.rglob("fathom-sandbox-*"))


def _reported_usage(request: list[dict], tools: list[dict], message: dict) -> dict[str, int]:
    """What a real endpoint reports as usage; the scripted policy reports none, so this is the
    in-process loop's own estimate of the same call (characters / 4), sent with the action."""
    return estimated_usage(request, tools, message)


async def play(
    url: str, task_index: int, *, stop_after: int | None = None, patient: bool = False
) -> Any:
    """One episode of the reference policy through the typed client; returns the last result.
    `stop_after` disconnects after that many actions, mid-episode. A `patient` client sends no
    WebSocket keepalive ping: on a busy shared 2-core machine, a test process running 32
    scripted policies and the policy server can be starved for longer than the 20 s pong
    deadline, which would be a test artefact, not a server fault."""
    policy = get_policy(POLICY)
    ping = None if patient else 20.0
    async with FathomEnvClient(url, message_timeout_s=300, ping_interval_s=ping) as env:
        result = await env.reset(task_index=task_index)
        assert isinstance(result.observation, FathomObservation)
        messages = list(result.observation.messages)
        tools = result.observation.tools
        actions = 0
        for turn in range(100):
            request = list(messages)
            reply = await policy.respond(request, tools)
            usage = _reported_usage(request, tools, reply.message)
            assistant, calls = normalize_assistant(reply.message, turn)
            messages.append(assistant)
            if not calls:
                answer = FathomAction(tool="answer", message=assistant["content"], usage=usage)
                return await env.step(answer)
            for index, call in enumerate(calls):
                raw = call.arguments
                arguments = json.loads(raw) if isinstance(raw, str) else dict(raw or {})
                if index == 0:
                    arguments["usage"] = usage
                action = FathomAction(tool=call.name, call_index=index, **arguments)
                result = await env.step(action)
                actions += 1
                if stop_after is not None and actions >= stop_after:
                    return result
                if result.done:
                    return result
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": result.observation.output,
                    }
                )
    raise AssertionError("the episode did not end")


def test_user_rows_match_the_in_process_loop(
    openenv_server: Any, kit: Any, user_policy_url: str, user_rows: list[TaskRecord]
) -> None:
    """`--source` serves the user's own rows: the server loads them itself, asks each question
    as the model sees it, and scores each episode as the core does."""
    server = openenv_server(
        [
            "fathom_rlm.openenv.server.app",
            *("--llm-base-url", user_policy_url, "--llm-model", POLICY),
            *("--source", str(kit.user_rows_path), "--num-examples", str(kit.user_row_count)),
        ]
    )
    for index, row in enumerate(user_rows):
        with reading_any_text():  # the root plays the reference as the policy server does
            result = asyncio.run(play(server.url, index))
        want = kit.replay_scores(row, POLICY)
        obs = result.observation
        assert result.done and obs.ended_by == "answer"
        assert result.reward == pytest.approx(want[REWARD_NAME]), row.row_id
        assert obs.rewards == pytest.approx({k: want[k] for k in COMPONENT_NAMES})
        assert untimed(obs.metrics) == pytest.approx(untimed(want, METRIC_NAMES))
        assert obs.rewards["correctness"] == 1.0

    async def first_messages() -> list[dict[str, Any]]:
        async with FathomEnvClient(server.url, message_timeout_s=300) as env:
            return (await env.reset(task_index=1)).observation.messages

    assert asyncio.run(first_messages())[-1]["content"].endswith(task_question(user_rows[1]))


def test_scripted_episode_matches_in_process_loop(
    server: Any, kit: Any, eval_rows: list[TaskRecord]
) -> None:
    for index, row in enumerate(eval_rows):
        result = asyncio.run(play(server.url, index))
        assert result.done
        want = kit.replay_scores(row, POLICY)
        obs = result.observation
        assert result.reward == pytest.approx(want[REWARD_NAME]), row.question
        assert obs.done and obs.reward == result.reward
        assert obs.rewards == pytest.approx({k: want[k] for k in COMPONENT_NAMES})
        assert untimed(obs.metrics) == pytest.approx(untimed(want, METRIC_NAMES))
        assert obs.ended_by == "answer"
    assert any(kit.replay_scores(row, POLICY)[REWARD_NAME] > 0.5 for row in eval_rows), (
        "the reference policy must be rewarded, or the comparison proves little"
    )


def test_a_model_played_episode_ends_and_scores_as_the_in_process_loop(
    server: Any, kit: Any, eval_rows: list[TaskRecord], tmp_path: Any
) -> None:
    """`envtools.openenv_play`, the client a model plays through, against a model endpoint that
    errs as real models do: malformed calls (bad JSON, an unknown tool, wrong types, a bad slice),
    empty turns and replies cut at the token cap. Every episode ends as the in-process loop ends
    the same replies (a cut one as "truncated") with the same scores (`--check` replays each)."""
    from envtools.faults import FaultPlan
    from envtools.mistakes import tool_error_kind
    from envtools.openenv_play import main as play_main
    from envtools.policy_server import policy_server_in_thread

    out = tmp_path / "episodes.jsonl"
    plan = FaultPlan(malformed=0.5, empty=0.1, cut=0.2, seed=4)  # every malformed kind
    with policy_server_in_thread(faults=plan) as url:
        code = play_main(
            [
                *("--env", "fathom-rlm", "--server", server.url),
                *("--model", "fathom-grep-only", "--base-url", url),
                *("--episodes", str(len(eval_rows)), "--out", str(out), "--check"),
                *("--doc-tokens", str(kit.doc_tokens), "--num-examples", str(len(eval_rows))),
            ]
        )
    assert code == 0
    episodes = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(episodes) == len(eval_rows)
    ended = {e["ended_by"] for e in episodes}
    outputs = [m["content"] for e in episodes for m in e["messages"] if m["role"] == "tool"]
    kinds = {tool_error_kind(o) for o in outputs} - {None}
    assert {"truncated", "answer"} <= ended  # a cut reply went as an answer with finish_reason
    assert {"call_not_json", "unknown_tool", "bad_arguments", "bad_slice"} <= kinds, outputs


async def _bad_actions(url: str) -> list[Any]:
    # Raw dictionaries, as any client may send them: what is tested is the server's own checks.
    seen: list[Any] = []
    async with GenericEnvClient(base_url=url) as env:
        with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
            await env.step({"tool": "repl", "code": "print(1)"})
        await env.reset(task_index=0)
        for action in (
            {"tool": "shell", "code": "ls"},
            {"tool": "repl"},
            {"tool": "repl", "code": "print(doc[:5])", "prompt": "x"},
            {"tool": "llm", "prompt": "who?", "slice": "10:5"},
            {"tool": "llm", "prompt": "who?", "slice": "no_such_variable"},
            {"tool": "repl", "code": "x = (" * 3},
            {"tool": "repl", "code": "import os"},
            {"tool": "repl", "code": "print(len(doc))"},
        ):
            result = await env.step(action)
            assert not result.done
            seen.append(result.observation)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            await env.step({"tool": "repl", "code": 123})
        result = await env.step({"tool": "answer"})
        assert not result.done
        seen.append(result.observation)
        final = await env.step({"tool": "answer", "message": "<answer>nobody</answer>"})
        assert final.done and final.reward == 0.0
        with pytest.raises(RuntimeError, match="the episode is over"):
            await env.step({"tool": "repl", "code": "print(1)"})
    return seen


async def _two_sessions(url: str) -> tuple[str, str, FathomState]:
    async with FathomEnvClient(url) as first, FathomEnvClient(url) as second:
        await first.reset(task_index=0)
        await second.reset(task_index=0)
        await first.step(FathomAction(tool="repl", code="secret = 41"))
        other = await second.step(FathomAction(tool="repl", code="print(secret)"))
        mine = await first.step(FathomAction(tool="repl", code="print(secret + 1)"))
        state = await first.state()
        return other.observation.output, mine.observation.output, state


def test_sessions_are_isolated_and_openenv_routes_answer(server: Any) -> None:
    other, mine, state = asyncio.run(_two_sessions(server.url))
    assert "secret" in other and other.startswith("Error")  # the other session's REPL
    assert mine.strip() == "42"
    assert isinstance(state, FathomState)
    assert state.step_count == 2 and state.task_index == 0 and not state.done
    schema = httpx.get(f"{server.url}/schema", timeout=30).json()
    assert {"tool", "code", "prompt", "slice", "message"} <= set(schema["action"]["properties"])
    assert httpx.get(f"{server.url}/health", timeout=30).json()["status"] == "healthy"


def test_bad_actions_get_clear_errors(server: Any) -> None:
    observations = asyncio.run(_bad_actions(server.url))
    errors = [obs["error"] for obs in observations]
    assert "unknown tool 'shell'" in errors[0]
    assert "repl is missing code" in errors[1]
    assert "unexpected arguments prompt" in errors[2]
    assert "is empty" in errors[3]
    assert errors[4] is not None and "no_such_variable" in errors[4]
    assert errors[5] is not None and errors[6] is not None
    # After every mistake the session still works: the REPL runs the next cell.
    assert errors[7] is None and observations[7]["output"].strip().isdigit()
    assert "answer needs `message`" in errors[8]


async def _many_sessions(url: str, sessions: int) -> list[Any]:
    runs = [
        play(url, i % NUM_EXAMPLES, stop_after=2 if i % 4 == 3 else None, patient=True)
        for i in range(sessions)
    ]
    return await asyncio.gather(*runs)


def test_32_concurrent_sessions_leave_nothing(
    server: Any, kit: Any, eval_rows: list[TaskRecord]
) -> None:
    # One episode first, so the process-wide parts (fork server, janitor) exist in the baseline.
    assert asyncio.run(play(server.url, 0)).done
    baseline_fds = server.open_fds()
    results = asyncio.run(_many_sessions(server.url, 32))
    finished = [r for i, r in enumerate(results) if i % 4 != 3]
    want = {i: kit.replay_scores(row, POLICY)[REWARD_NAME] for i, row in enumerate(eval_rows)}
    for i, result in enumerate(results):
        if i % 4 != 3:
            assert result.done and result.reward == pytest.approx(want[i % NUM_EXAMPLES])
    assert len(finished) == 24
    # Every session is closed (the disconnected ones by openenv-core): no sandbox worker, no
    # sandbox directory and no extra descriptor is left while the server keeps running.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        sandboxes(server) or sandbox_dirs(server) or server.open_fds() > baseline_fds
    ):
        time.sleep(0.2)
    assert sandboxes(server) == []
    assert sandbox_dirs(server) == []
    assert server.open_fds() <= baseline_fds
    # Stopping the server takes its fork server, janitor and scratch root with it.
    assert server.stop() == {}
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal to exit by it.
    assert server.proc.returncode in (0, -signal.SIGTERM), server.log.read_text()[-3000:]
    assert list(server.tmp.iterdir()) == []
