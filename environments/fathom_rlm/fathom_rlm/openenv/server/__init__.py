"""The server side of fathom-rlm's OpenEnv environment: the environment and its app."""

from fathom_rlm._vendor.openenv_guard.lazy import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__, {"FathomEnvironment": "environment", "ServerOptions": "environment"}
)
