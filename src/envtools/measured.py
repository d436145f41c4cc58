"""When, where and at which commit a measurement ran: the line a results page opens with."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime


def machine() -> str:
    """The machine a measurement runs on, as a results page states it: system, Python, CPUs and
    the load average when it starts."""
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return (
        f"{platform.system()} {platform.machine()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs{load}"
    )


def source_commit(where: str | os.PathLike[str] = ".") -> str:
    """The git commit a measurement ran at ("abc1234", "+ local changes" when the work tree
    differs), or "no git checkout": a results page says which code it measured."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", os.fspath(where), *args], capture_output=True, text=True, timeout=30
        )
        if done.returncode != 0:
            raise OSError(done.stderr)
        return done.stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return "no git checkout"
    return commit + (" + local changes" if dirty else "")


def measured_by(command: str, *, also: str = "") -> str:
    """A results page's first line: the date, the commit, the command and the machine (with
    `also` added to the machine's description)."""
    return (
        f"Measured on {datetime.now(UTC):%Y-%m-%d} at commit {source_commit()} by `{command}` "
        f"({machine()}{also})."
    )
