"""Serving an openenv-core environment to clients it does not trust (see `settings` for the
limits, `middleware` for where they are enforced, `quotas` for model-endpoint budgets)."""

from .app import RowResetArgs, add_error_handlers, guard_app, guarded_env_app, serve
from .client import ModelClient, TokenClient, TokenEnvClient
from .command import run_server, server_parser
from .environment import LoopEnvironment, row_index
from .flags import add_config_arguments, config_values
from .middleware import ServingGuard
from .quotas import (
    Client,
    ClientQuotas,
    QuotaExceeded,
    Reservation,
    SessionBudget,
    current_client,
    offload,
)
from .settings import (
    TOKEN_FILE_VAR,
    TOKEN_VAR,
    GuardSettings,
    add_guard_arguments,
    check_endpoint_url,
    fail_at_start,
    guard_settings,
)

__all__ = [
    "TOKEN_FILE_VAR",
    "TOKEN_VAR",
    "Client",
    "ClientQuotas",
    "GuardSettings",
    "LoopEnvironment",
    "ModelClient",
    "QuotaExceeded",
    "Reservation",
    "RowResetArgs",
    "ServingGuard",
    "SessionBudget",
    "TokenClient",
    "TokenEnvClient",
    "add_config_arguments",
    "add_error_handlers",
    "add_guard_arguments",
    "check_endpoint_url",
    "config_values",
    "current_client",
    "fail_at_start",
    "guard_app",
    "guard_settings",
    "guarded_env_app",
    "offload",
    "row_index",
    "run_server",
    "serve",
    "server_parser",
]
