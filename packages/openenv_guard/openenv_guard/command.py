"""An environment's server command: its own flags, then the guard's, and serving the app it
builds from them."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .settings import GuardSettings, add_guard_arguments, guard_settings


def server_parser(
    module: str,
    description: str,
    add_arguments: Callable[[argparse.ArgumentParser], None],
    *,
    max_sessions: int,
    reset_rate: float | None = None,
) -> argparse.ArgumentParser:
    """The flags of `python -m <module>`: the environment's (`add_arguments`), then the guard's
    (address, tokens, limits, quotas; `max_sessions` is the default session cap, `reset_rate`
    the default resets per second per client, `GuardSettings`' when None)."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    add_arguments(parser)
    add_guard_arguments(parser, max_sessions=max_sessions, reset_rate=reset_rate)
    return parser


def run_server(
    parser: argparse.ArgumentParser,
    build_app: Callable[[argparse.Namespace, GuardSettings], Any],
    name: str,
    argv: list[str] | None = None,
) -> None:
    """Parse `argv` (default: the command line), then serve the app `build_app` makes from the
    flags and the guard's settings; `name` is the environment's, for the start-up line."""
    args = parser.parse_args(argv)
    from .app import serve  # openenv-core's server: seconds to import, not needed for --help

    settings = guard_settings(args)
    serve(build_app(args, settings), settings, name)


__all__ = ["run_server", "server_parser"]
