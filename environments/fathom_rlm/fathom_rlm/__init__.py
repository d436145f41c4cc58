"""fathom-rlm: recursive-language-model environment over long synthetic documents."""

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

_V1_EXPORTS = {
    "FathomTaskset": "fathom_rlm.adapters.v1",
    "FathomHarness": "fathom_rlm.adapters.harness",
    "FathomEnv": "fathom_rlm.adapters.v1",
}


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


# verifiers' v1 loader reads `__all__` (exactly one Taskset; here also the harness that is the
# taskset's default and the env that makes a local run the default) and then fetches each name,
# which imports the adapter on first access.
__all__ = list(_V1_EXPORTS) if _v1_usable() else []


def __getattr__(name: str) -> Any:
    if name in _V1_EXPORTS and name in __all__:
        module = importlib.import_module(_V1_EXPORTS[name])
        return getattr(module, name)
    raise AttributeError(f"module 'fathom_rlm' has no attribute {name!r}")


def load_environment(**kwargs: Any) -> Any:
    """The legacy verifiers entry point (verifiers 0.2.0 to 0.3.1); kwargs are the environment's
    arguments (see `fathom_rlm.adapters.arguments.FathomArguments`)."""
    release = _verifiers_release()
    if release is None:
        raise ImportError(
            "fathom-rlm's load_environment needs verifiers: pip install 'fathom-rlm[verifiers]'"
        )
    if release >= (0, 4):
        raise ImportError(
            "fathom-rlm's load_environment needs the legacy verifiers API (verifiers 0.2 and "
            f"0.3); verifiers {version('verifiers')} has only the v1 API: run "
            "`vf-eval fathom-rlm -m <model>` (the v1 taskset) instead"
        )
    from fathom_rlm.adapters.legacy import load_environment as load

    return load(**kwargs)
