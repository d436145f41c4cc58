"""Serving an openenv-core environment to clients it does not trust (see `settings` for the
limits, `middleware` for where they are enforced, `quotas` for model-endpoint budgets)."""

from .lazy import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "Client": "quotas",
        "ClientQuotas": "quotas",
        "GuardSettings": "settings",
        "LoopEnvironment": "environment",
        "ModelClient": "client",
        "QuotaExceeded": "quotas",
        "Reservation": "quotas",
        "RowResetArgs": "app",
        "ServingGuard": "middleware",
        "SessionBudget": "quotas",
        "TOKEN_FILE_VAR": "settings",
        "TOKEN_VAR": "settings",
        "TokenClient": "client",
        "TokenEnvClient": "client",
        "add_config_arguments": "flags",
        "add_error_handlers": "app",
        "add_guard_arguments": "settings",
        "check_endpoint_url": "settings",
        "config_values": "flags",
        "current_client": "quotas",
        "fail_at_start": "settings",
        "guard_app": "app",
        "guard_settings": "settings",
        "guarded_env_app": "app",
        "offload": "quotas",
        "row_index": "environment",
        "run_server": "command",
        "serve": "app",
        "server_parser": "command",
    },
)
