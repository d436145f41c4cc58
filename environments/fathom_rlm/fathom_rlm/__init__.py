"""fathom-rlm: recursive-language-model environment over long synthetic documents."""

import importlib
from typing import Any

from fathom_rlm._vendor.env_adapters import has_v1_api, require_legacy_api

_V1_EXPORTS = {
    "FathomTaskset": "fathom_rlm.adapters.v1",
    "FathomHarness": "fathom_rlm.adapters.harness",
    "FathomEnv": "fathom_rlm.adapters.v1",
}

# verifiers' v1 loader reads `__all__` (exactly one Taskset; here also the harness that is the
# taskset's default and the env that makes a local run the default) and then fetches each name,
# which imports the adapter on first access.
__all__ = list(_V1_EXPORTS) if has_v1_api() else []


def __getattr__(name: str) -> Any:
    if name in _V1_EXPORTS and name in __all__:
        module = importlib.import_module(_V1_EXPORTS[name])
        return getattr(module, name)
    raise AttributeError(f"module 'fathom_rlm' has no attribute {name!r}")


def load_environment(**kwargs: Any) -> Any:
    """The legacy verifiers entry point (verifiers 0.2.0 to 0.3.1); kwargs are the environment's
    arguments (see `fathom_rlm.adapters.arguments.FathomArguments`)."""
    require_legacy_api("fathom-rlm")
    from fathom_rlm.adapters.legacy import load_environment as load

    return load(**kwargs)
