"""gsm8k-multireward over OpenEnv: the server command on 127.0.0.1, driven by the environment's
typed client (`Gsm8kEnvClient`) and, for malformed actions, by openenv-core's generic client.
Each answer gets the rewards the core computes for the same reply; bad actions get clear errors;
32 concurrent sessions run, and stopping the server leaves nothing behind.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from gsm8k_lab.policies import Gsm8kPolicy
from gsm8k_multireward import GSM8KConfig, MathGrader, score_completion
from gsm8k_multireward.openenv import Gsm8kAction, Gsm8kEnvClient, Gsm8kObservation
from openenv.core.generic_client import GenericEnvClient

FIXTURE = Path(__file__).parent / "fixtures" / "adapters.jsonl"
WEIGHT = 0.5
STYLES = Gsm8kPolicy.STYLES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200), pytest.mark.xdist_group("test_openenv")]


@pytest.fixture(scope="module")
def server(module_openenv_server: Any) -> Any:
    """The gsm8k OpenEnv server, shared by this module's tests."""
    return module_openenv_server(
        [
            "gsm8k_multireward.openenv.server.app",
            *("--data", str(FIXTURE), "--length-reward-weight", str(WEIGHT)),
        ]
    )


async def answer(url: str, task_index: int, style: str) -> tuple[Any, str, int, str]:
    """One episode: reset, the ladder rung's reply as the answer action."""
    policy = Gsm8kPolicy(style, data_path=FIXTURE)
    async with Gsm8kEnvClient(url) as env:
        reset = await env.reset(task_index=task_index)
        assert isinstance(reset.observation, Gsm8kObservation) and not reset.done
        messages = reset.observation.messages
        reply = await policy.respond(messages, None)
        tokens = reply.usage["completion_tokens"]
        content = reply.message["content"]
        result = await env.step(Gsm8kAction(message=content, completion_tokens=tokens))
        return result, content, tokens, messages[-1]["content"]


def test_answers_score_as_the_core(server: Any, grader: MathGrader) -> None:
    config = GSM8KConfig(length_reward_weight=WEIGHT)
    golds = {row["question"]: row["answer"] for row in _rows()}
    for index, style in enumerate(STYLES * 2):
        result, content, tokens, question = asyncio.run(answer(server.url, index % 6, style))
        core = score_completion(content, golds[question], grader, config, reported_tokens=tokens)
        assert result.done and result.observation.done
        assert result.reward == pytest.approx(core["reward"]) == result.observation.reward
        assert result.observation.rewards == {
            "correct_answer": core["correct_answer"],
            "length_reward": core["length_reward"],
        }
        assert core["correct_answer"] == (1.0 if style in ("gold", "verbose") else 0.0)


def _rows() -> list[dict[str, Any]]:
    from gsm8k_multireward import load_examples

    return load_examples(path=str(FIXTURE))


async def _bad_actions(url: str) -> list[dict[str, Any]]:
    # Raw dictionaries, as any client may send them: what is tested is the server's own checks.
    async with GenericEnvClient(base_url=url) as env:
        with pytest.raises(RuntimeError, match=r"call reset\(\) before step\(\)"):
            await env.step({"message": "\\boxed{1}"})
        with pytest.raises(RuntimeError, match=r"task_index must be in \[0, 6\)"):
            await env.reset(task_index=99)
        await env.reset(task_index=0)
        refused = await env.step({"tool": "shell", "message": "ls"})
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            await env.step({"completion_tokens": 3})  # no message
        final = await env.step({"message": "no boxed answer here"})
        assert final.done and final.reward == 0.0
        with pytest.raises(RuntimeError, match="the episode is over"):
            await env.step({"message": "\\boxed{29}"})
        return [refused.observation]


def test_a_model_played_episode_scores_as_the_core(
    server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`envtools.openenv_play` with a model endpoint (scripted: its exact and its verbose
    replies): each reply's server scores are what the core grades for it (`--check`)."""
    from gsm8k_lab.policies import POLICIES

    from envtools.openenv_play import main as play_main
    from envtools.policy_server import policy_server_in_thread

    monkeypatch.setenv("GSM8K_POLICY_DATA", str(FIXTURE))
    for style in ("gsm8k-gold", "gsm8k-verbose"):
        out = tmp_path / f"{style}.jsonl"
        with policy_server_in_thread(policies={style: POLICIES[style]}) as url:
            code = play_main(
                [
                    *("--env", "gsm8k-multireward", "--server", server.url),
                    *("--model", style, "--base-url", url, "--episodes", "3"),
                    *("--out", str(out), "--check", "--data", str(FIXTURE)),
                    *("--length-reward-weight", str(WEIGHT)),
                ]
            )
        assert code == 0
        rewards = [json.loads(line)["reward"] for line in out.read_text().splitlines()]
        assert len(rewards) == 3 and all(r > 0 for r in rewards)


def test_bad_actions_get_clear_errors(server: Any) -> None:
    (refused,) = asyncio.run(_bad_actions(server.url))
    assert "unknown tool 'shell'" in refused["error"]


def test_32_concurrent_sessions_leave_nothing(server: Any) -> None:
    async def run_all() -> list[Any]:
        return await asyncio.gather(
            *(answer(server.url, i % 6, STYLES[i % len(STYLES)]) for i in range(32))
        )

    results = asyncio.run(run_all())
    assert all(result.done for result, *_ in results)
    correct = [result.observation.rewards["correct_answer"] for result, *_ in results]
    assert correct == [1.0 if STYLES[i % 4] in ("gold", "verbose") else 0.0 for i in range(32)]
    assert server.stop() == {}
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal to exit by it.
    assert server.proc.returncode in (0, -signal.SIGTERM), server.log.read_text()[-3000:]
    assert list(server.tmp.iterdir()) == []
