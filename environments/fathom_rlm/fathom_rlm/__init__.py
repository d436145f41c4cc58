"""fathom-rlm: recursive-language-model environment over long synthetic documents."""

import importlib.util
import os
from typing import Any

_V1_EXPORTS = {
    "FathomTaskset": "fathom_rlm.adapters.v1",
    "FathomHarness": "fathom_rlm.adapters.harness",
    "FathomEnv": "fathom_rlm.adapters.v1",
}


def _v1_usable() -> bool:
    """Whether the installed verifiers has the v1 API this package targets (0.3.x and 0.4.x).

    Decided from the installed files, without importing verifiers: importing `verifiers.v1`
    takes seconds, and code that only uses the core must not pay for it. verifiers 0.2.0 ships
    an older, incompatible `verifiers.v1` without the single-agent env; older releases none.
    """
    spec = importlib.util.find_spec("verifiers")
    roots = spec.submodule_search_locations if spec is not None else None
    return any(
        os.path.isdir(os.path.join(root, "v1", "envs", "single_agent")) for root in roots or ()
    )


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
    if importlib.util.find_spec("verifiers") is None:
        raise ImportError(
            "fathom-rlm's load_environment needs verifiers: pip install 'fathom-rlm[verifiers]'"
        )
    try:
        import verifiers

        verifiers.MultiTurnEnv  # noqa: B018 - absent when verifiers has no legacy API (0.4.0+)
    except (ImportError, AttributeError) as exc:
        raise ImportError(
            "fathom-rlm's load_environment needs the legacy verifiers API (verifiers 0.2.0 to "
            "0.3.1), and the installed verifiers has only the v1 API; there, run "
            "`vf-eval fathom-rlm -m <model>` (the v1 taskset) instead."
        ) from exc
    from fathom_rlm.adapters.legacy import load_environment as load

    return load(**kwargs)
