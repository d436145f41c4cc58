"""The TRL adapter in process: TRL's reward-function calling convention, without TRL itself.

TRL calls `fn(prompts=..., completions=..., completion_ids=..., **dataset_columns)`; the training
run through TRL is in tests/integration/test_trl_launch.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gsm8k_multireward import GSM8KConfig, MathGrader, score_completion
from gsm8k_multireward.adapters.trl import (
    REWARD_KEYS,
    completion_text,
    load_trl_environment,
    reward_functions,
)

pytestmark = pytest.mark.xdist_group("test_adapters_trl")

FIXTURE = Path(__file__).parent / "fixtures" / "adapters.jsonl"
GOLD = "29"  # the first fixture row


def assistant(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


@pytest.fixture(scope="module")
def env():  # type: ignore[no-untyped-def]
    loaded = load_trl_environment(
        dataset_name=str(FIXTURE), length_threshold_tokens=8, length_reward_weight=0.5
    )
    yield loaded
    loaded.close()


def call(fn, completions, answers, completion_ids=None):  # type: ignore[no-untyped-def]
    """Call a reward function exactly as TRL's trainer does (keyword arguments only)."""
    return fn(
        prompts=[[{"role": "user", "content": "q"}]] * len(completions),
        completions=completions,
        completion_ids=completion_ids,
        answer=answers,
        trainer_state=None,
        log_extra=lambda *a, **k: None,
        log_metric=lambda *a, **k: None,
    )


def test_dataset_and_reward_names(env) -> None:  # type: ignore[no-untyped-def]
    assert list(env.reward_funcs) == list(REWARD_KEYS) == ["correct_answer", "length_reward"]
    # TRL logs each reward under the function's __name__.
    assert [fn.__name__ for fn in env.reward_funcs.values()] == list(REWARD_KEYS)
    assert env.reward_weights == {"correct_answer": 1.0, "length_reward": 0.5}
    assert env.environment_factory is None
    rows = env.train_dataset
    assert len(rows) == len(FIXTURE.read_text().splitlines())
    assert rows[0]["answer"] == GOLD
    assert [m["role"] for m in rows[0]["prompt"]] == ["system", "user"]
    assert "\\boxed{}" in rows[0]["prompt"][0]["content"]


def test_rewards_use_the_generated_token_count(env) -> None:  # type: ignore[no-untyped-def]
    completions = [
        assistant("so \\boxed{29}"),  # correct, 3 tokens: under the threshold of 8
        assistant("so \\boxed{29}"),  # correct, but 20 generated tokens
        assistant("so \\boxed{30}"),  # wrong and short: the gate pays nothing
        assistant("no boxed answer"),
    ]
    ids = [[1] * 3, [1] * 20, [1] * 3, [1] * 3]
    answers = [GOLD] * 4
    correct = call(env.reward_funcs["correct_answer"], completions, answers, ids)
    length = call(env.reward_funcs["length_reward"], completions, answers, ids)
    assert correct == [1.0, 1.0, 0.0, 0.0]
    assert length == [1.0, 0.0, 0.0, 0.0]


def test_rewards_equal_the_core_scores(grader: MathGrader) -> None:
    config = GSM8KConfig(length_threshold_tokens=5)
    functions = reward_functions(config, grader)
    texts = [
        "<think>\\boxed{3}</think> The answer is \\boxed{29}.",
        "\\boxed{29.0}",
        "\\boxed{\\frac{58}{2}}",
        "\\boxed{28}",
        "x" * 40 + "\\boxed{29}",
        "",
    ]
    # Without token ids the core estimates length from characters (chars_per_token).
    for key, fn in functions.items():
        got = call(fn, [assistant(t) for t in texts], [GOLD] * len(texts))
        expected = [score_completion(t, GOLD, grader, config)[key] for t in texts]
        assert got == expected, key
    assert call(functions["correct_answer"], texts, [GOLD] * len(texts))[:4] == [1, 1, 1, 0]


def test_completion_text_reads_trl_completions() -> None:
    assert completion_text("plain") == "plain"
    assert completion_text(assistant("a")) == "a"
    multi_part = [{"role": "assistant", "content": [{"type": "text", "text": "b"}]}]
    assert completion_text(multi_part) == "b"
    assert completion_text([{"role": "tool", "content": "x"}]) == ""


def test_mismatched_columns_fail_loudly(env) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="2 completions but 1 answers"):
        call(env.reward_funcs["correct_answer"], [assistant("1"), assistant("2")], [GOLD])


def test_bad_arguments_fail_at_load() -> None:
    with pytest.raises(ValueError, match="length_threshold_tokens"):
        load_trl_environment(dataset_name=str(FIXTURE), length_threshold_tokens=0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        load_trl_environment(dataset_name=str(FIXTURE), no_such_argument=1)
