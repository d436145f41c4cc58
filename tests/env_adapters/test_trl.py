"""The TRL plumbing: reward functions named by their keys and called as TRL calls them (keyword
arguments only), and the object a launcher takes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fathom_rlm._vendor.env_adapters import RewardBatch, TRLEnvironment, named_rewards


def test_each_key_gets_a_function_named_by_it() -> None:
    functions = named_rewards(["correct", "short"], lambda batch: [], "each completion")
    assert list(functions) == ["correct", "short"]
    for key, function in functions.items():
        assert function.__name__ == function.__qualname__ == key
        assert function.__doc__ == (
            f"The core's `{key}` of each completion (TRL's reward-function signature)."
        )


def test_a_function_returns_its_key_of_each_completions_scores() -> None:
    batches: list[RewardBatch] = []

    def scores(batch: RewardBatch) -> Sequence[Mapping[str, float]]:
        batches.append(batch)
        return [{"a": float(len(c)), "b": -1.0} for c in batch.completions]

    functions = named_rewards(["a", "b"], scores, "each completion")
    call: dict[str, Any] = {
        "prompts": ["p1", "p2"],
        "completions": ["x", "yyy"],
        "completion_ids": [[1, 2, 3], [4]],
        "answer": ["1", "2"],
        "trainer_state": None,
    }
    assert functions["a"](**call) == [1.0, 3.0]
    assert functions["b"](**call) == [-1.0, -1.0]
    batch = batches[0]
    assert batch.prompts == ["p1", "p2"]
    assert batch.completions == ["x", "yyy"]
    # The token counts are the lengths of TRL's completion ids; the other columns pass through.
    assert batch.completion_tokens == [3, 1]
    assert [batch.tokens(0), batch.tokens(1)] == [3, 1]
    assert batch.columns == {"answer": ["1", "2"], "trainer_state": None}


def test_without_completion_ids_no_token_count_is_known() -> None:
    batches: list[RewardBatch] = []

    def scores(batch: RewardBatch) -> Sequence[Mapping[str, float]]:
        batches.append(batch)
        return [{"a": 0.5}]

    assert named_rewards(["a"], scores, "each rollout")["a"](prompts=["p"], completions=["c"]) == [
        0.5
    ]
    assert batches[0].completion_tokens is None
    assert batches[0].tokens(0) is None


def test_a_single_turn_environment_needs_no_factory_defaults_or_close() -> None:
    first = TRLEnvironment(train_dataset=[], reward_funcs={}, reward_weights={"a": 1.0})
    second = TRLEnvironment(train_dataset=[], reward_funcs={}, reward_weights={"a": 1.0})
    assert first.environment_factory is None
    assert first.trainer_defaults == {}
    first.trainer_defaults["max_tool_calling_iterations"] = 3
    assert second.trainer_defaults == {}  # each instance has its own
    assert first.close() is None
