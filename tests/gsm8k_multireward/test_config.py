"""Environment arguments: seed defaults and clear errors for bad values."""

from __future__ import annotations

import dataclasses

import pytest
from gsm8k_multireward import GSM8KConfig


def test_defaults_match_the_published_environment() -> None:
    defaults = {field.name: field.default for field in dataclasses.fields(GSM8KConfig)}
    assert defaults == {
        "dataset_name": "openai/gsm8k",
        "dataset_subset": "main",
        "dataset_split": "train",
        "system_prompt": None,
        "length_threshold_tokens": 1024,
        "length_reward_weight": 1.0,
        "chars_per_token": 4.0,
        "math_verify_max_workers": 10,
        "math_verify_timeout": 5.0,
        "num_examples": None,
    }
    GSM8KConfig()  # valid as is


def test_valid_overrides() -> None:
    config = GSM8KConfig(
        dataset_split="test",
        system_prompt="Be brief.",
        length_threshold_tokens=None,
        length_reward_weight=0.0,
        chars_per_token=3,
        math_verify_max_workers=1,
        math_verify_timeout=0.5,
        num_examples=10,
    )
    assert config.length_threshold_tokens is None


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"dataset_name": ""}, "dataset_name"),
        ({"dataset_subset": " "}, "dataset_subset"),
        ({"dataset_split": ""}, "dataset_split"),
        ({"dataset_split": "train test"}, "dataset_split"),
        ({"system_prompt": 3}, "system_prompt"),
        ({"length_threshold_tokens": 0}, "length_threshold_tokens"),
        ({"length_threshold_tokens": -5}, "length_threshold_tokens"),
        ({"length_threshold_tokens": 10.5}, "length_threshold_tokens"),
        ({"length_reward_weight": -1.0}, "length_reward_weight"),
        ({"length_reward_weight": float("nan")}, "length_reward_weight"),
        ({"chars_per_token": 0}, "chars_per_token"),
        ({"chars_per_token": float("inf")}, "chars_per_token"),
        ({"math_verify_max_workers": 0}, "math_verify_max_workers"),
        ({"math_verify_max_workers": 2.0}, "math_verify_max_workers"),
        ({"math_verify_max_workers": True}, "math_verify_max_workers"),
        ({"math_verify_timeout": 0}, "math_verify_timeout"),
        ({"math_verify_timeout": "5"}, "math_verify_timeout"),
        ({"num_examples": 0}, "num_examples"),
    ],
)
def test_bad_values_name_the_argument(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        GSM8KConfig(**kwargs)
