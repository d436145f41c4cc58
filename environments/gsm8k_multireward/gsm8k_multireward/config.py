"""Environment arguments, with the names and defaults of the published environment."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

DEFAULT_SYSTEM_PROMPT = (
    "Solve the math word problem. Think step by step, then give the final answer as a plain "
    "number inside \\boxed{}, for example \\boxed{42}."
)

_SPLITS = ("train", "test")

SCORING_SETTINGS = (
    "length_threshold_tokens",
    "chars_per_token",
    "math_verify_max_workers",
    "math_verify_timeout",
)
"""The `GSM8KConfig` fields that scoring one completion reads (the rest choose the rows, the
prompt and the weights)."""


@dataclass
class GSM8KConfig:
    """Arguments of the gsm8k-multireward environment (each documented by its `help` metadata,
    from which the v1 taskset config and the OpenEnv server's flags are derived)."""

    dataset_name: str = field(
        default="openai/gsm8k",
        metadata={
            "help": (
                "Hub dataset id, or a local .jsonl file (a directory stands for "
                "`<dir>/<split>.jsonl`)."
            )
        },
    )
    dataset_subset: str = field(
        default="main",
        metadata={"help": 'Hub dataset configuration (GSM8K\'s are "main" and "socratic").'},
    )
    dataset_split: str = field(
        default="train",
        metadata={"help": 'Dataset split to serve, e.g. "train" or "test".'},
    )
    system_prompt: str | None = field(
        default=None,
        metadata={
            "help": (
                "None sends `DEFAULT_SYSTEM_PROMPT` (it asks for the answer in `\\boxed{}`, which "
                "is what the grader reads); an empty string sends no system message."
            )
        },
    )
    length_threshold_tokens: int | None = field(
        default=1024,
        metadata={
            "help": (
                "The length reward is 1 for a correct answer of at most this many completion "
                "tokens, else 0; None disables it (it is then always 0.0)."
            )
        },
    )
    length_reward_weight: float = field(
        default=1.0,
        metadata={
            "help": ("Weight of the length reward in the total reward (correctness has weight 1).")
        },
    )
    chars_per_token: float = field(
        default=4.0,
        metadata={"help": "Characters per token when the API reports no completion-token count."},
    )
    math_verify_max_workers: int = field(
        default=10,
        metadata={
            "help": (
                "Worker processes that run math-verify (its parser can hang, so it runs out of "
                "process)."
            )
        },
    )
    math_verify_timeout: float = field(
        default=5.0,
        metadata={
            "help": ("Seconds one math-verify call may take; an answer that runs past it scores 0.")
        },
    )
    num_examples: int | None = field(
        default=None,
        metadata={"help": "Rows served from the split; None serves the whole split."},
    )

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ValueError naming the first bad argument."""
        if not isinstance(self.dataset_name, str) or not self.dataset_name.strip():
            raise ValueError("dataset_name must be a non-empty string (hub id or .jsonl path)")
        if not isinstance(self.dataset_subset, str) or not self.dataset_subset.strip():
            raise ValueError("dataset_subset must be a non-empty string, e.g. 'main'")
        if (
            not isinstance(self.dataset_split, str)
            or not self.dataset_split
            or any(char.isspace() for char in self.dataset_split)
        ):
            raise ValueError(
                f"dataset_split must be a split name such as {_SPLITS}, got {self.dataset_split!r}"
            )
        if self.system_prompt is not None and not isinstance(self.system_prompt, str):
            raise ValueError("system_prompt must be a string or None")
        if self.length_threshold_tokens is not None and (
            not _is_int(self.length_threshold_tokens) or self.length_threshold_tokens <= 0
        ):
            raise ValueError(
                "length_threshold_tokens must be a positive integer, or None to disable the "
                f"length reward; got {self.length_threshold_tokens!r}"
            )
        if not _is_finite_number(self.length_reward_weight) or self.length_reward_weight < 0:
            raise ValueError(
                f"length_reward_weight must be a finite number >= 0, got "
                f"{self.length_reward_weight!r}"
            )
        if not _is_finite_number(self.chars_per_token) or self.chars_per_token <= 0:
            raise ValueError(
                f"chars_per_token must be a finite number > 0, got {self.chars_per_token!r}"
            )
        if not _is_int(self.math_verify_max_workers) or self.math_verify_max_workers < 1:
            raise ValueError(
                f"math_verify_max_workers must be an integer >= 1, got "
                f"{self.math_verify_max_workers!r}"
            )
        if not _is_finite_number(self.math_verify_timeout) or self.math_verify_timeout <= 0:
            raise ValueError(
                f"math_verify_timeout must be a finite number of seconds > 0, got "
                f"{self.math_verify_timeout!r}"
            )
        if self.num_examples is not None and (
            not _is_int(self.num_examples) or self.num_examples < 1
        ):
            raise ValueError(
                f"num_examples must be a positive integer or None, got {self.num_examples!r}"
            )


def _is_int(value: object) -> bool:
    # bool is an int subclass; True as a worker count is a bug, not a 1.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_finite_number(value: object) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )
