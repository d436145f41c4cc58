"""Thin adapters from the framework-free core to trainer frameworks.

- `legacy`: verifiers' legacy API (0.2.x–0.3.1), `load_environment(**kwargs)`.
- `v1`: verifiers' v1 API (0.3.x–0.4.x), a `Taskset` plus a local-by-default `Env`.
- `trl`: TRL's `GRPOTrainer`, one reward function per component (imports no TRL).
- `fields`: `GSM8KConfig`'s fields as pydantic fields, for the v1 config and task data.

The OpenEnv environment is its own package, `gsm8k_multireward.openenv`.

The verifiers modules import verifiers at import time; import the one that matches the installed
verifiers (the package `__init__` does this for you).
"""
