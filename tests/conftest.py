"""The verifiers support matrix: which Python runs each verifiers version, and how to call it.

The main venv holds verifiers 0.3.1; scripts/test.sh builds venvs for 0.2.0 and 0.4.0 and
exports their interpreters as VERIFIERS_0_2_0_PYTHON / VERIFIERS_0_4_0_PYTHON. Under CI
(CI=true) a missing matrix venv fails the test; elsewhere it is skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

MAIN_VERIFIERS = "0.3.1"


def _matrix_python(verifiers_version: str) -> Path:
    """The interpreter of the venv that has `verifiers_version` installed."""
    if verifiers_version == MAIN_VERIFIERS:
        assert version("verifiers") == MAIN_VERIFIERS, "the main venv must pin verifiers 0.3.1"
        return Path(sys.executable)
    variable = f"VERIFIERS_{verifiers_version.replace('.', '_')}_PYTHON"
    value = os.environ.get(variable)
    if value and Path(value).is_file():
        return Path(value)
    reason = f"${variable} names no interpreter: scripts/test.sh builds the verifiers matrix venvs"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def _script(python: Path, name: str) -> Path:
    """A console script installed beside `python` (e.g. `vf-eval`)."""
    path = python.parent / name
    assert path.is_file(), f"{path} is missing"
    return path


def _offline_env(**extra: str) -> dict[str, str]:
    """The environment for a matrix subprocess: no network beyond loopback.

    The v1 `null` harness prepares a PEP 723 script with `uv` (scripts/test.sh resolves its
    dependencies beforehand, so UV_OFFLINE works) after a `pip install -U uv` that
    PIP_NO_INDEX turns into a no-op check.
    """
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("`uv` must be on PATH: the v1 null harness runs its program through it")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("VIRTUAL_ENV") and "API_KEY" not in key
    }
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        UV_OFFLINE="1",
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        POLICY_API_KEY="scripted",
        PATH=os.pathsep.join([str(Path(uv).parent), env.get("PATH", "")]),
        **extra,
    )
    return env


def _run(argv: list[str | Path], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run a matrix command; on failure, show its output."""
    result = subprocess.run(
        [str(arg) for arg in argv],
        cwd=cwd,
        env=_offline_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, (
        f"{argv[0]} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    )
    return result


class Matrix:
    """What a matrix test needs, handed out by the `matrix` fixture."""

    python = staticmethod(_matrix_python)
    script = staticmethod(_script)
    env = staticmethod(_offline_env)
    run = staticmethod(_run)


@pytest.fixture
def matrix() -> type[Matrix]:
    return Matrix
