"""The server side of gsm8k-multireward's OpenEnv environment: the environment and its app."""

from gsm8k_multireward._vendor.openenv_guard.lazy import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__, {"Gsm8kEnvironment": "environment", "ServerOptions": "environment"}
)
