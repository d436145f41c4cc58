"""The environment's arguments, shared by both adapters: which rows to serve and the rollout caps.

Legacy `-a '{...}'` kwargs and v1 `--env.taskset.<field>` flags map onto the same names, with the
defaults taken from the core (`RolloutCaps`), so both APIs run the same environment.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from fathom_rlm.agent import RolloutCaps
from fathom_rlm.documents import SPLIT_SIZES
from fathom_rlm.documents.world import CHAPTER_TOKENS

MIN_DOC_TOKENS = 2 * CHAPTER_TOKENS
"""The shortest document the generator builds (two chapters)."""

_CAPS = RolloutCaps()

CAP_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RolloutCaps) if f.name != "sandbox")
"""The caps of `RolloutCaps` that are environment arguments (the sandbox config is not)."""


@dataclass(frozen=True)
class FathomArguments:
    """Everything `vf-eval -a` (legacy) or `--env.taskset.*` (v1) can set."""

    split: str = "eval"
    """"train", "eval" or "heldout" (the held-out split is built only when named)."""
    num_examples: int | None = None
    """Rows served from the split; None serves the whole split."""
    doc_tokens: int = 200_000
    """Document length in tokens (characters / 4); lower it for a curriculum or a quick run."""
    family_mix: dict[str, float] | None = None
    """Relative weights of the task families; None uses the split's default mix."""
    sub_max_completion_tokens: int | None = None
    """Completion-token cap sent with every sub-call; None leaves the run's sampling as it is."""
    max_turns: int = _CAPS.max_turns
    sub_max_turns: int = _CAPS.sub_max_turns
    max_sub_calls: int = _CAPS.max_sub_calls
    max_slice_chars: int = _CAPS.max_slice_chars
    max_depth: int = _CAPS.max_depth
    max_answer_chars: int = _CAPS.max_answer_chars
    max_code_chars: int = _CAPS.max_code_chars
    max_prompt_chars: int = _CAPS.max_prompt_chars
    max_sub_answer_chars: int = _CAPS.max_sub_answer_chars
    max_tool_calls_per_turn: int = _CAPS.max_tool_calls_per_turn
    time_budget_s: float | None = _CAPS.time_budget_s
    """Wall-clock seconds for a whole rollout (root and sub-calls); None: no budget."""

    def __post_init__(self) -> None:
        # Checked here, not when the split is built: a launcher's config check and prime-rl's
        # config parse build no documents, and a typo should fail there, before any GPU work.
        if self.split not in SPLIT_SIZES:
            raise ValueError(
                f"fathom-rlm argument split must be one of {sorted(SPLIT_SIZES)}, "
                f"got {self.split!r}"
            )
        if isinstance(self.doc_tokens, bool) or not isinstance(self.doc_tokens, int):
            raise ValueError(
                f"fathom-rlm argument doc_tokens must be an int, got {self.doc_tokens!r}"
            )
        if self.doc_tokens < MIN_DOC_TOKENS:
            raise ValueError(
                f"fathom-rlm argument doc_tokens must be >= {MIN_DOC_TOKENS}, got {self.doc_tokens}"
            )
        for name in ("num_examples", "sub_max_completion_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ValueError(f"fathom-rlm argument {name} must be None or >= 1, got {value!r}")
        self.caps()  # fail at load time, not inside the first rollout

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any]) -> FathomArguments:
        """Build from loose kwargs, naming every unknown argument in the error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise TypeError(
                f"fathom-rlm got unknown arguments {unknown}; it accepts {sorted(known)}"
            )
        return cls(**kwargs)

    def caps(self) -> RolloutCaps:
        return RolloutCaps(**{name: getattr(self, name) for name in CAP_FIELDS})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
