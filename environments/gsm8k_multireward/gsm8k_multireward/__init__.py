"""gsm8k-multireward: GSM8K with a correctness reward and a correctness-gated length reward."""

from importlib.metadata import PackageNotFoundError, version

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


def _verifiers_release() -> tuple[int, int] | None:
    """The installed verifiers' (major, minor), read from its metadata without importing it
    (importing `verifiers.v1` takes seconds); None when verifiers is not installed.

    The v1 API this package targets is in 0.3 and later (0.2 ships an older, incompatible
    `verifiers.v1`); the legacy API (`load_environment`) is in 0.2 and 0.3 only.
    """
    try:
        major, minor = version("verifiers").split(".")[:2]
        return int(major), int(minor)
    except (PackageNotFoundError, ValueError):
        return None


def _v1_usable() -> bool:
    release = _verifiers_release()
    return release is not None and release >= (0, 3)


def load_environment(**kwargs: object) -> object:
    """The legacy verifiers entry point (verifiers 0.2 and 0.3): a single-turn env with two
    named rewards; kwargs are `GSM8KConfig`'s fields."""
    release = _verifiers_release()
    if release is None:
        raise ImportError(
            "gsm8k-multireward's load_environment needs verifiers: "
            "pip install 'gsm8k-multireward[verifiers]'"
        )
    if release >= (0, 4):
        raise ImportError(
            "gsm8k-multireward's load_environment needs the legacy verifiers API (verifiers 0.2 "
            f"and 0.3); verifiers {version('verifiers')} has only the v1 API: run "
            "`vf-eval gsm8k-multireward -m <model>` (the v1 taskset) instead"
        )
    from gsm8k_multireward.adapters.legacy import load_legacy_environment

    return load_legacy_environment(**kwargs)


__all__ += ["load_environment"]
if _v1_usable():
    __all__ += list(_V1_EXPORTS)


def __getattr__(name: str) -> object:
    if name in _V1_EXPORTS and _v1_usable():
        from gsm8k_multireward.adapters import v1

        return getattr(v1, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
