"""The server side of fathom-rlm's OpenEnv environment: the environment and its app."""

from fathom_rlm.openenv.server.environment import FathomEnvironment, ServerOptions

__all__ = ["FathomEnvironment", "ServerOptions"]
