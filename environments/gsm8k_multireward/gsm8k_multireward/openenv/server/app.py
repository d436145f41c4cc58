"""gsm8k-multireward served by openenv-core's own HTTP/WebSocket app, behind `openenv_guard`.

    python -m gsm8k_multireward.openenv.server.app --port 8000 --data PATH/TO/gsm8k/test.jsonl

The flags are derived from `GSM8KConfig`: one per field (`--dataset-name`, `--dataset-subset`,
`--system-prompt`, `--length-threshold-tokens`, `--math-verify-timeout`...), with the field's
default and help; `--data` and `--split` are the names `--dataset-name` and `--dataset-split`
also answer to. The guard's flags (bearer tokens, per-client sessions, size, depth and argument
checks, idle and life timeouts: see docs/serving.md) come with them. The data is loaded before
the server binds, so bad data fails at start.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

# Only what the flags need is imported here: openenv-core's server (and the environment, which
# builds on it) takes seconds to import, so `--help` and a bad flag do not wait for it.
from gsm8k_multireward._vendor.openenv_guard.command import run_server, server_parser
from gsm8k_multireward._vendor.openenv_guard.flags import add_config_arguments, config_values
from gsm8k_multireward._vendor.openenv_guard.settings import GuardSettings, fail_at_start
from gsm8k_multireward.config import GSM8KConfig

if TYPE_CHECKING:
    from gsm8k_multireward._vendor.openenv_guard.middleware import ServingGuard
    from gsm8k_multireward.openenv.server.environment import ServerOptions

FLAG_ALIASES = {"dataset_name": ("--data",), "dataset_split": ("--split",)}
"""Shorter flags for two config fields (the names the server has always taken)."""


def build_parser() -> argparse.ArgumentParser:
    """The server command's flags (see the module docstring)."""
    return server_parser(
        "gsm8k_multireward.openenv.server.app",
        "Serve gsm8k-multireward over OpenEnv (openenv-core HTTP + WebSocket).",
        lambda parser: add_config_arguments(parser, GSM8KConfig, aliases=FLAG_ALIASES),
        max_sessions=256,
        reset_rate=1000.0,  # an episode is one reset and one step, and a reset costs little
    )


def server_options(args: argparse.Namespace) -> ServerOptions:
    """The sessions' settings from the parsed flags, with the rows loaded: a bad value or bad
    data fails before the server binds."""
    from gsm8k_multireward.openenv.server.environment import ServerOptions, load_rows

    try:
        config = GSM8KConfig(**config_values(args, GSM8KConfig))
    except ValueError as exc:
        fail_at_start(" ".join(str(exc).split()))
    data = config.dataset_name
    try:  # the rows are loaded now, so bad data fails here and not at the first reset
        if not load_rows(config):
            fail_at_start(f"--data {data} has no rows")
    except Exception as exc:
        fail_at_start(f"cannot load --data {data}: {' '.join(str(exc).split())[:300]}")
    return ServerOptions(config)


def create_gsm8k_app(options: ServerOptions, settings: GuardSettings) -> ServingGuard:
    """openenv-core's app for gsm8k-multireward behind the guard (with `/healthz`); the
    process's math-verify workers close with it."""
    from gsm8k_multireward._vendor.openenv_guard.app import guarded_env_app
    from gsm8k_multireward.openenv.models import Gsm8kAction, Gsm8kObservation
    from gsm8k_multireward.openenv.server.environment import Gsm8kEnvironment, close_graders

    return guarded_env_app(
        lambda: Gsm8kEnvironment(options),
        Gsm8kAction,
        Gsm8kObservation,
        env_name="gsm8k-multireward",
        settings=settings,
        close=close_graders,
    )


def main(argv: list[str] | None = None) -> None:
    run_server(
        build_parser(),
        lambda args, settings: create_gsm8k_app(server_options(args), settings),
        "gsm8k-multireward",
        argv,
    )


if __name__ == "__main__":
    main()


__all__ = ["build_parser", "create_gsm8k_app", "main"]
