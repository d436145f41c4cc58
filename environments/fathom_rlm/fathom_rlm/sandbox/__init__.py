"""Sandbox for model-written Python over a long document.

Two layers: RestrictedPython decides what the code may name (no imports, no private
attributes, wrapper helpers instead of modules), and a confined worker process decides what it
may do (rlimits, an unprivileged uid, no network, no files, empty environment, a wall clock).
See docs/sandbox.md for the threat model and measurements.
"""

from .config import LLMRefused, ReplResult, SandboxConfig, isolation_report, warm_up
from .launcher import SandboxError, fork_server_cpu_seconds, shutdown_fork_servers
from .session import SandboxSession

__all__ = [
    "LLMRefused",
    "ReplResult",
    "SandboxConfig",
    "SandboxError",
    "SandboxSession",
    "fork_server_cpu_seconds",
    "isolation_report",
    "shutdown_fork_servers",
    "warm_up",
]
