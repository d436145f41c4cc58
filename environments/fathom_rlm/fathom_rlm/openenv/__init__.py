"""fathom-rlm as an OpenEnv environment, laid out as openenv-core's own environments are.

- `models`: the wire types, `FathomAction`, `FathomObservation` and `FathomState`.
- `client`: `FathomEnvClient`, the typed client (openenv-core's `EnvClient`, with an optional
  bearer token).
- `server.environment`: `FathomEnvironment`, one rollout per session.
- `server.app`: openenv-core's HTTP/WebSocket app behind `openenv_guard`, and the server command

      python -m fathom_rlm.openenv.server.app --port 8000 --llm-base-url URL --llm-model NAME

  whose flags are the environment's arguments (`FathomArguments`), the sub-call endpoint's
  (`Endpoint`, as `--llm-*`) and the guard's.
- `openenv.yaml`: the environment's OpenEnv manifest.
"""

from fathom_rlm._vendor.openenv_guard.lazy import lazy_exports

# Imported on first use: the wire types build on openenv-core, which takes seconds to import.
__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "FathomEnvClient": "client",
        "FathomAction": "models",
        "FathomObservation": "models",
        "FathomState": "models",
    },
)
