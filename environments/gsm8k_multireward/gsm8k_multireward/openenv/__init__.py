"""gsm8k-multireward as an OpenEnv environment, laid out as openenv-core's own environments are.

- `models`: the wire types, `Gsm8kAction`, `Gsm8kObservation` and `Gsm8kState`.
- `client`: `Gsm8kEnvClient`, the typed client (openenv-core's `EnvClient`, with an optional
  bearer token).
- `server.environment`: `Gsm8kEnvironment`, one question per session.
- `server.app`: openenv-core's HTTP/WebSocket app behind `openenv_guard`, and the server command

      python -m gsm8k_multireward.openenv.server.app --port 8000 --data PATH/TO/gsm8k/test.jsonl

  whose flags are the environment's arguments (`GSM8KConfig`) and the guard's.
- `openenv.yaml`: the environment's OpenEnv manifest.
"""

from gsm8k_multireward._vendor.openenv_guard.lazy import lazy_exports

# Imported on first use: the wire types build on openenv-core, which takes seconds to import.
__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "Gsm8kEnvClient": "client",
        "Gsm8kAction": "models",
        "Gsm8kObservation": "models",
        "Gsm8kState": "models",
    },
)
