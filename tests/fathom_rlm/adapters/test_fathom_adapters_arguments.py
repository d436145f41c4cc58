"""The shared adapter arguments: validation, and the caps reaching the reward."""

from __future__ import annotations

from typing import Any

import pytest
from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.adapters.scoring import reward_config, score
from fathom_rlm.agent import RolloutCaps, RolloutRecord
from fathom_rlm.documents import TaskRecord
from fathom_rlm.rewards import RewardConfig


@pytest.mark.parametrize("name", ["num_examples", "sub_max_completion_tokens"])
@pytest.mark.parametrize("value", [0, -3])
def test_counts_below_one_are_rejected_by_name(name: str, value: int) -> None:
    with pytest.raises(ValueError, match=rf"{name} must be None or >= 1, got {value}"):
        FathomArguments(**{name: value})


@pytest.mark.parametrize("name", ["num_examples", "sub_max_completion_tokens"])
def test_counts_may_be_none_or_positive(name: str) -> None:
    assert getattr(FathomArguments(**{name: None}), name) is None
    assert getattr(FathomArguments(**{name: 1}), name) == 1


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("split", "tarin", r"split must be one of \['eval', 'heldout', 'train'\], got 'tarin'"),
        ("doc_tokens", -5, "doc_tokens must be >= 3000, got -5"),
        ("doc_tokens", 2_999, "doc_tokens must be >= 3000"),
        ("doc_tokens", "16000", "doc_tokens must be an int"),
    ],
)
def test_a_bad_split_or_document_length_fails_before_any_document_is_built(
    name: str, value: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FathomArguments(**{name: value})
    assert FathomArguments(split="heldout", doc_tokens=3_000).doc_tokens == 3_000


def test_reward_config_follows_the_caps() -> None:
    args = FathomArguments(max_answer_chars=5, max_slice_chars=6_000)
    cfg = reward_config(args)
    assert cfg == RewardConfig.from_caps(args.caps())
    assert (cfg.max_answer_chars, cfg.max_slice_chars) == (5, 6_000)
    # Every other reward setting keeps its default.
    assert cfg == RewardConfig(max_answer_chars=5, max_slice_chars=6_000)
    assert RewardConfig.from_caps(None) == RewardConfig.from_caps(RolloutCaps()) == RewardConfig()
    assert RewardConfig.from_caps(RolloutCaps(), budget_k=2.0).budget_k == 2.0


def test_a_non_default_answer_cap_reaches_the_score() -> None:
    row = TaskRecord.from_json(
        {
            "question": "Who is the holder of permit QX-1?",
            "answer": "Dyjirn Shoudo",
            "aliases": [],
            "seed": 1,
            "family": "exact_id",
            "depth": 0,
            "spans": [],
            "doc_tokens": 16_000,
            "region": None,
        }
    )
    record = RolloutRecord(
        final_message="<answer>Dyjirn Shoudo</answer>", touched_document=True, ended_by="answer"
    )
    assert score(record, row, FathomArguments())["correctness"] == 1.0
    capped = score(record, row, FathomArguments(max_answer_chars=5))
    assert capped["format_gate"] == 1.0 and capped["correctness"] == 0.0


def test_time_budget_reaches_both_adapters() -> None:
    from fathom_rlm.adapters.legacy import FathomLegacyEnv, ended_by_from_stop
    from fathom_rlm.adapters.v1 import FathomTasksetConfig

    args = FathomArguments(time_budget_s=42.5, num_examples=1, doc_tokens=16_000)
    assert args.caps().time_budget_s == 42.5
    # legacy: verifiers' own rollout timeout, reported as the core's reason
    assert FathomLegacyEnv(args).timeout_seconds == 42.5
    assert ended_by_from_stop("timeout_reached") == "time_budget"
    # v1: a taskset field, carried into the caps the harness runs with
    assert FathomTasksetConfig(time_budget_s=42.5).arguments().caps().time_budget_s == 42.5
    assert FathomArguments(time_budget_s=None).caps().time_budget_s is None
    with pytest.raises(ValueError, match="time_budget_s"):
        FathomArguments(time_budget_s=0)
