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

from gsm8k_multireward.openenv.client import Gsm8kEnvClient
from gsm8k_multireward.openenv.models import Gsm8kAction, Gsm8kObservation, Gsm8kState

__all__ = ["Gsm8kAction", "Gsm8kEnvClient", "Gsm8kObservation", "Gsm8kState"]
