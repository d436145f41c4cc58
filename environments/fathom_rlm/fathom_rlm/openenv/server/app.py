"""fathom-rlm served by openenv-core's own HTTP/WebSocket app, behind `openenv_guard`.

    python -m fathom_rlm.openenv.server.app --port 8000 --llm-base-url URL --llm-model NAME

The flags are derived from the configs they build: one per `FathomArguments` field
(`--doc-tokens`, `--max-turns`, `--family-mix '{"temporal": 2}'`, `--source rows.jsonl` for
your own rows...), one per `Endpoint` field prefixed `llm-` (`--llm-base-url`, `--llm-model`,
`--llm-api-key-var`, `--llm-timeout-s`...),
each with the field's default and help, plus the guard's (bearer tokens, per-client sessions,
size, depth and argument checks, idle and life timeouts, quotas: see docs/serving.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

# Only what the flags need is imported here: openenv-core's server (and the environment, which
# builds on it) takes seconds to import, so `--help` and a bad flag do not wait for it.
from fathom_rlm._vendor.openenv_guard.command import run_server, server_parser
from fathom_rlm._vendor.openenv_guard.flags import add_config_arguments, config_values
from fathom_rlm._vendor.openenv_guard.settings import (
    GuardSettings,
    check_endpoint_url,
    fail_at_start,
)
from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.adapters.endpoint import Endpoint

if TYPE_CHECKING:
    from fathom_rlm._vendor.openenv_guard.middleware import ServingGuard
    from fathom_rlm.openenv.server.environment import ServerOptions

T = TypeVar("T")

ENDPOINT_PREFIX = "llm_"
"""The server's flags for the sub-call endpoint are `Endpoint`'s fields with this prefix."""
SUB_MAX_COMPLETION_TOKENS = 4096
"""`--sub-max-completion-tokens` when it is not given: the server always sends `max_tokens`,
since a sub-call reserves it against the client's quotas before it is sent."""


def build_parser() -> argparse.ArgumentParser:
    """The server command's flags (see the module docstring)."""
    return server_parser(
        "fathom_rlm.openenv.server.app",
        "Serve fathom-rlm over OpenEnv (HTTP + WebSocket, openenv-core's server).",
        _add_arguments,
        max_sessions=64,
    )


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(parser, Endpoint, prefix=ENDPOINT_PREFIX)
    add_config_arguments(
        parser.add_argument_group("environment arguments"),
        FathomArguments,
        names=FathomArguments.names(),
    )


def server_options(args: argparse.Namespace, settings: GuardSettings) -> ServerOptions:
    """The sessions' settings from the parsed flags; a bad value fails before the server binds."""
    endpoint = _or_fail(lambda: Endpoint.from_options(vars(args), ENDPOINT_PREFIX))
    check_endpoint_url(endpoint.base_url, "--llm-base-url")
    key_var = endpoint.api_key_var
    if key_var and not endpoint.api_key():
        fail_at_start(f"--llm-api-key-var names {key_var}, which is not set")
    if key_var and not settings.tokens:
        fail_at_start(
            "--llm-api-key-var needs a bearer token: the key is never used for a client"
            " that has not authenticated"
        )
    values = config_values(args, FathomArguments, names=FathomArguments.names())
    if values["sub_max_completion_tokens"] is None:
        values["sub_max_completion_tokens"] = SUB_MAX_COMPLETION_TOKENS
    arguments = _or_fail(lambda: FathomArguments(**values))
    from fathom_rlm.openenv.server.environment import ServerOptions

    return ServerOptions(endpoint, arguments)


def _or_fail(build: Callable[[], T]) -> T:
    try:
        return build()
    except ValueError as exc:
        fail_at_start(" ".join(str(exc).split()))


def create_fathom_app(options: ServerOptions, settings: GuardSettings) -> ServingGuard:
    """openenv-core's app for fathom-rlm behind the guard (with `/healthz`); the process's
    sandbox fork server and scratch root close with it."""
    from fathom_rlm._vendor.openenv_guard.app import guarded_env_app
    from fathom_rlm._vendor.openenv_guard.quotas import ClientQuotas
    from fathom_rlm.openenv.models import FathomAction, FathomObservation
    from fathom_rlm.openenv.server.environment import FathomEnvironment
    from fathom_rlm.serving import close_serving_scope

    quotas = ClientQuotas(settings)
    return guarded_env_app(
        lambda: FathomEnvironment(options, quotas),
        FathomAction,
        FathomObservation,
        env_name="fathom-rlm",
        settings=settings,
        close=close_serving_scope,
        quotas=quotas,
    )


def main(argv: list[str] | None = None) -> None:
    run_server(
        build_parser(),
        lambda args, settings: create_fathom_app(server_options(args, settings), settings),
        "fathom-rlm",
        argv,
    )


if __name__ == "__main__":
    main()


__all__ = ["build_parser", "create_fathom_app", "main"]
