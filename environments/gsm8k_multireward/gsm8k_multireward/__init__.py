"""gsm8k-multireward: GSM8K with a correctness reward and a correctness-gated length reward."""

from gsm8k_multireward._vendor.env_adapters import has_v1_api, require_legacy_api
from gsm8k_multireward.config import DEFAULT_SYSTEM_PROMPT, GSM8KConfig
from gsm8k_multireward.data import build_prompt, load_examples
from gsm8k_multireward.grading import MathGrader, gold_from_solution
from gsm8k_multireward.parsing import extract_answer
from gsm8k_multireward.rewards import (
    CORRECT_ANSWER,
    LENGTH_REWARD,
    REWARD,
    REWARD_COMPONENTS,
    ascore_completion,
    completion_tokens,
    length_reward,
    score_completion,
    total_reward,
)

__all__ = [
    "CORRECT_ANSWER",
    "DEFAULT_SYSTEM_PROMPT",
    "LENGTH_REWARD",
    "REWARD",
    "REWARD_COMPONENTS",
    "GSM8KConfig",
    "MathGrader",
    "ascore_completion",
    "build_prompt",
    "completion_tokens",
    "extract_answer",
    "gold_from_solution",
    "length_reward",
    "load_examples",
    "score_completion",
    "total_reward",
]

# --- verifiers adapters -------------------------------------------------------------------------
# Both are imported lazily: importing the core never pays for (or fails on) a framework import.
# Legacy vf-eval calls `load_environment`; the v1 loader takes the one Taskset subclass (and
# the one Env) named in `__all__`, which module `__getattr__` imports on first access.
_V1_EXPORTS = ("GSM8KMultirewardTaskset", "LocalEnv")


def load_environment(**kwargs: object) -> object:
    """The legacy verifiers entry point (verifiers 0.2 and 0.3): a single-turn env with two
    named rewards; kwargs are `GSM8KConfig`'s fields."""
    require_legacy_api("gsm8k-multireward")
    from gsm8k_multireward.adapters.legacy import load_legacy_environment

    return load_legacy_environment(**kwargs)


__all__ += ["load_environment"]
if has_v1_api():
    __all__ += list(_V1_EXPORTS)


def __getattr__(name: str) -> object:
    if name in _V1_EXPORTS and has_v1_api():
        from gsm8k_multireward.adapters import v1

        return getattr(v1, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
