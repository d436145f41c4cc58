"""The v1 adapter in process (verifiers 0.3.1), and how the package exposes both APIs."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from gsm8k_multireward import DEFAULT_SYSTEM_PROMPT, GSM8KConfig, MathGrader, score_completion

FIXTURE = Path(__file__).parent / "fixtures" / "adapters.jsonl"


def test_importing_the_package_imports_no_framework() -> None:
    code = (
        "import sys, gsm8k_multireward as g; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('verifiers', 'datasets')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_v1_loader_finds_one_taskset_and_one_env() -> None:
    import gsm8k_multireward
    from gsm8k_multireward.adapters.v1 import GSM8KMultirewardTaskset, LocalEnv
    from verifiers.v1.utils.loaders import environment_class, taskset_class

    assert taskset_class("gsm8k-multireward") is GSM8KMultirewardTaskset
    assert environment_class("gsm8k-multireward") is LocalEnv
    assert {"GSM8KMultirewardTaskset", "LocalEnv", "GSM8KConfig"} <= set(gsm8k_multireward.__all__)


def test_config_fields_mirror_the_core_and_carry_the_weight() -> None:
    from gsm8k_multireward.adapters.v1 import GSM8KMultirewardTasksetConfig

    core_fields = set(GSM8KConfig.__dataclass_fields__) - {"system_prompt"}
    assert core_fields <= set(GSM8KMultirewardTasksetConfig.model_fields)
    config = GSM8KMultirewardTasksetConfig(id="gsm8k-multireward", length_reward_weight=0.25)
    assert config.task.rewards["length_reward"].weight == 0.25
    # Validating the dumped config again (as a served worker does) keeps it.
    again = GSM8KMultirewardTasksetConfig.model_validate(config.model_dump())
    assert again.task.rewards["length_reward"].weight == 0.25
    with pytest.raises(ValueError, match="contradicts"):
        GSM8KMultirewardTasksetConfig(
            length_reward_weight=0.25, task={"rewards": {"length_reward": {"weight": 2.0}}}
        )
    with pytest.raises(ValueError, match="chars_per_token"):
        GSM8KMultirewardTasksetConfig(chars_per_token=0)


def test_tasks_carry_question_gold_and_scoring_settings() -> None:
    from gsm8k_multireward.adapters.v1 import (
        GSM8KMultirewardTaskset,
        GSM8KMultirewardTasksetConfig,
    )

    config = GSM8KMultirewardTasksetConfig(
        id="gsm8k-multireward", dataset_name=str(FIXTURE), length_threshold_tokens=300
    )
    tasks = list(GSM8KMultirewardTaskset(config))
    rows = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    assert [t.data.prompt for t in tasks] == [r["question"] for r in rows]
    assert tasks[4].data.answer == "1435"
    assert {t.data.length_threshold_tokens for t in tasks} == {300}
    assert {t.data.system_prompt for t in tasks} == {DEFAULT_SYSTEM_PROMPT}


@pytest.mark.parametrize(
    ("reply", "completion_tokens"),
    [
        ("<think>ok</think> \\boxed{29}", 12),
        ("<think>ok</think> \\boxed{29}", 2000),
        ("<think>" + "x" * 5000 + "</think> \\boxed{29}", None),  # no usage: characters / 4
        ("\\boxed{30}", 3),
    ],
)
def test_rewards_equal_the_core(
    grader: MathGrader, reply: str, completion_tokens: int | None
) -> None:
    from gsm8k_multireward.adapters.v1 import GSM8KMultirewardData, GSM8KMultirewardTask

    task = GSM8KMultirewardTask(GSM8KMultirewardData(prompt="q", answer="29"))
    trace = _trace(task, reply, completion_tokens)

    async def score() -> tuple[float, float]:
        return await task.correct_answer(trace), await task.length_reward(trace)

    core = score_completion(reply, "29", grader, GSM8KConfig(), completion_tokens)
    assert asyncio.run(score()) == (core["correct_answer"], core["length_reward"])


def _trace(task: object, last_reply: str, completion_tokens: int | None) -> SimpleNamespace:
    """A trace stand-in with what the rewards read: the reply, the usage, and a fresh state of
    the task's own `State` type (as verifiers creates one per rollout)."""
    from verifiers.v1.state import state_cls

    usage = (
        None if completion_tokens is None else SimpleNamespace(completion_tokens=completion_tokens)
    )
    return SimpleNamespace(last_reply=last_reply, usage=usage, state=state_cls(type(task))())


class _CountingGrader:
    def __init__(self, inner: MathGrader) -> None:
        self.inner = inner
        self.calls = 0

    async def agrade(self, predicted: str | None, gold: str) -> bool:
        self.calls += 1
        await asyncio.sleep(0.01)  # both rewards are waiting by the time the grade lands
        return await self.inner.agrade(predicted, gold)


def test_both_rewards_share_one_grading_per_trace(
    grader: MathGrader, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gsm8k_multireward.adapters import v1
    from gsm8k_multireward.adapters.v1 import GSM8KMultirewardData, GSM8KMultirewardTask

    counting = _CountingGrader(grader)
    monkeypatch.setattr(v1, "_grader", lambda *_: counting)
    task = GSM8KMultirewardTask(GSM8KMultirewardData(prompt="q", answer="29"))
    reply = "<think>ok</think> \\boxed{29}"
    core = score_completion(reply, "29", grader, GSM8KConfig(), 12)
    expected = (core["correct_answer"], core["length_reward"])

    async def concurrently(trace: object) -> tuple[float, float]:
        return tuple(await asyncio.gather(task.correct_answer(trace), task.length_reward(trace)))

    async def one_after_the_other(trace: object) -> tuple[float, float]:
        return await task.correct_answer(trace), await task.length_reward(trace)

    async def run() -> None:
        assert await concurrently(_trace(task, reply, 12)) == expected
        assert counting.calls == 1
        trace = _trace(task, reply, 12)
        assert await one_after_the_other(trace) == expected
        assert counting.calls == 2
        # Asked again, the rollout's rewards come from its one grading.
        assert await one_after_the_other(trace) == expected
        assert counting.calls == 2

    asyncio.run(run())


def test_the_gold_answer_validates_and_a_wrong_gold_does_not(grader: MathGrader) -> None:
    from gsm8k_multireward.adapters.v1 import GSM8KMultirewardData, GSM8KMultirewardTask

    async def validate(gold: str) -> bool:
        return await GSM8KMultirewardTask(GSM8KMultirewardData(prompt="q", answer=gold)).validate(
            None
        )

    assert asyncio.run(validate("1,435")) is True
    # A gold the grader cannot read as an answer is not gradable.
    assert asyncio.run(validate("}")) is False
