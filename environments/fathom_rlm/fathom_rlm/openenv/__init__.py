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

from fathom_rlm.openenv.client import FathomEnvClient
from fathom_rlm.openenv.models import FathomAction, FathomObservation, FathomState

__all__ = ["FathomAction", "FathomEnvClient", "FathomObservation", "FathomState"]
