"""Every limit of one rollout, as arguments (the environment's config surface maps onto these).

Each field's documentation is its `help` metadata, from which the adapters derive their config
fields, `--help` texts and server flags.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fathom_rlm.sandbox import SandboxConfig


@dataclass(frozen=True)
class RolloutCaps:
    max_turns: int = field(
        default=12,
        metadata={"help": "Root turns (model calls) before the rollout ends without an answer."},
    )
    sub_max_turns: int = field(
        default=4,
        metadata={"help": "Turns of a sub-call that is itself a small RLM."},
    )
    max_sub_calls: int = field(
        default=16,
        metadata={
            "help": (
                "Sub-calls per rollout, counted over all depths and from both the tool and REPL "
                "code."
            )
        },
    )
    max_parallel_sub_calls: int = field(
        default=5,
        metadata={
            "help": (
                "Sub-calls of one `llm_batch` (or one `llm` call over a list of slices) answered "
                "at once; each still counts against max_sub_calls."
            )
        },
    )
    max_slice_chars: int = field(
        default=12_000,
        metadata={"help": "Largest slice an `llm()` sub-call may be shown (about 3K tokens)."},
    )
    max_depth: int = field(
        default=2,
        metadata={
            "help": (
                "Sub-calls at depth < max_depth get tools; at max_depth they are plain completions."
            )
        },
    )
    max_answer_chars: int = field(
        default=64,
        metadata={
            "help": (
                "Longest answer that can score (shown to the model in the prompt; the reward reads "
                "it through `RewardConfig.from_caps`)."
            )
        },
    )
    max_code_chars: int = field(
        default=8_000,
        metadata={"help": "Longest `repl` code argument."},
    )
    max_prompt_chars: int = field(
        default=2_000,
        metadata={"help": "Longest `llm` prompt argument."},
    )
    max_sub_answer_chars: int = field(
        default=2_000,
        metadata={
            "help": "A sub-call's answer is cut to this before it is returned to its caller."
        },
    )
    max_tool_calls_per_turn: int = field(
        default=8,
        metadata={
            "help": (
                "Tool calls beyond this in one assistant message are answered with an error, not "
                "run."
            )
        },
    )
    time_budget_s: float | None = field(
        default=1800.0,
        metadata={
            "help": (
                "Wall-clock seconds for the whole rollout (root and every sub-call together); a "
                'rollout past it ends with `ended_by="time_budget"` and is scored on what it did. '
                "None: no budget."
            )
        },
    )
    sandbox: SandboxConfig | None = field(
        default=None,
        metadata={
            "help": (
                "Sandbox limits (timeouts, output cap, memory); None means the sandbox defaults."
            )
        },
    )

    def __post_init__(self) -> None:
        for name in (
            "max_turns",
            "sub_max_turns",
            "max_parallel_sub_calls",
            "max_slice_chars",
            "max_answer_chars",
            "max_code_chars",
            "max_prompt_chars",
            "max_sub_answer_chars",
            "max_tool_calls_per_turn",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")
        if self.max_sub_calls < 0 or self.max_depth < 0:
            raise ValueError("max_sub_calls and max_depth must be >= 0")
        budget = self.time_budget_s
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int | float) or not budget > 0
        ):
            raise ValueError(f"time_budget_s must be None or > 0, got {budget!r}")
