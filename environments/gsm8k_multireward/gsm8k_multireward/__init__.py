"""gsm8k-multireward: GSM8K with a correctness reward and a correctness-gated length reward."""

import importlib.util

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
    """Legacy verifiers entry point (0.2.x–0.3.1): a single-turn env with two named rewards.

    ``kwargs`` are ``GSM8KConfig``'s fields. Raises ImportError naming the installed version
    when verifiers has no legacy API (0.4 and later: use the Taskset).
    """
    if importlib.util.find_spec("verifiers") is None:
        raise ImportError(
            "gsm8k-multireward's load_environment needs verifiers: "
            "pip install 'gsm8k-multireward[verifiers]'"
        )
    from gsm8k_multireward.adapters.legacy import load_legacy_environment

    return load_legacy_environment(**kwargs)


def _has_verifiers_v1() -> bool:
    """Whether the installed verifiers has the v1 API this package targets (0.3.0 and later).

    Decided from the version, not by importing: 0.2.x ships an older, incompatible
    ``verifiers.v1``, and importing ``verifiers.v1`` takes seconds.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("verifiers").split(".")
        return (int(release[0]), int(release[1])) >= (0, 3)
    except (PackageNotFoundError, ValueError, IndexError):
        return False


__all__ += ["load_environment"]
if _has_verifiers_v1():
    __all__ += list(_V1_EXPORTS)


def __getattr__(name: str) -> object:
    if name in _V1_EXPORTS and _has_verifiers_v1():
        from gsm8k_multireward.adapters import v1

        return getattr(v1, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
