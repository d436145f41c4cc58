"""The server side of gsm8k-multireward's OpenEnv environment: the environment and its app."""

from gsm8k_multireward.openenv.server.environment import Gsm8kEnvironment, ServerOptions

__all__ = ["Gsm8kEnvironment", "ServerOptions"]
