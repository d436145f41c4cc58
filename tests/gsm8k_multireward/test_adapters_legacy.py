"""The legacy adapter in process (verifiers 0.3.1): it only translates the core."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from gsm8k_multireward import GSM8KConfig, MathGrader, load_environment, score_completion
from gsm8k_multireward.parsing import extract_answer

pytestmark = pytest.mark.xdist_group("test_adapters_legacy")

FIXTURE = Path(__file__).parent / "fixtures" / "adapters.jsonl"
GOLD = "29"  # the first fixture row


@pytest.fixture(scope="module")
def env():  # type: ignore[no-untyped-def]
    return load_environment(dataset_name=str(FIXTURE), length_reward_weight=0.5)


def our_rubric(env):  # type: ignore[no-untyped-def]
    """Our rubric's functions; the runner may wrap it in a group with its own monitor rubric."""
    rubric = env.rubric
    ours = [r for r in getattr(rubric, "rubrics", [rubric]) if r.funcs and r.weights[0] > 0]
    assert len(ours) == 1
    return ours[0]


def test_rubric_names_weights_and_dataset(env) -> None:  # type: ignore[no-untyped-def]
    import verifiers as vf

    assert isinstance(env, vf.SingleTurnEnv)
    rubric = our_rubric(env)
    assert [f.__name__ for f in rubric.funcs] == ["correct_answer", "length_reward"]
    assert rubric.weights == [1.0, 0.5]
    assert len(env.dataset) == len(FIXTURE.read_text().splitlines())
    row = env.dataset[0]
    assert row["answer"] == GOLD and row["prompt"][-1]["role"] == "user"
    assert env.parser.parse_answer([{"role": "assistant", "content": "\\boxed{7}"}]) == "7"


def test_system_prompt_becomes_the_first_message() -> None:
    env = load_environment(dataset_name=str(FIXTURE), system_prompt="Box it.", num_examples=2)
    assert len(env.dataset) == 2
    assert env.dataset[0]["prompt"][0] == {"role": "system", "content": "Box it."}


@pytest.mark.parametrize(
    ("completion", "usage"),
    [
        ("<think>ok</think> \\boxed{29}", {"input_tokens": 10, "output_tokens": 12}),
        ("<think>ok</think> \\boxed{29}", {"input_tokens": 10, "output_tokens": 2000}),
        ("<think>" + "x" * 5000 + "</think> \\boxed{29}", None),  # no usage: characters / 4
        ("\\boxed{30}", {"input_tokens": 10, "output_tokens": 3}),
        ("no box at all", {"input_tokens": 0, "output_tokens": 0}),
    ],
)
def test_scores_equal_the_core(
    env, grader: MathGrader, completion: str, usage: dict | None
) -> None:  # type: ignore[no-untyped-def]
    state: dict = {} if usage is None else {"usage": usage}
    messages = [{"role": "assistant", "content": completion}]

    async def score() -> list[float]:
        return [
            await f(completion=messages, answer=GOLD, state=state) for f in our_rubric(env).funcs
        ]

    correct, length = asyncio.run(score())
    tokens = usage["output_tokens"] if usage and usage["output_tokens"] > 0 else None
    core = score_completion(
        completion, GOLD, grader, GSM8KConfig(length_reward_weight=0.5), reported_tokens=tokens
    )
    assert (correct, length) == (core["correct_answer"], core["length_reward"])
    assert extract_answer(completion) == env.parser.parse_answer(messages)


def test_bad_argument_is_refused() -> None:
    with pytest.raises(ValueError, match="length_threshold_tokens"):
        load_environment(dataset_name=str(FIXTURE), length_threshold_tokens=0)
    with pytest.raises(TypeError):
        load_environment(dataset_name=str(FIXTURE), no_such_argument=1)
