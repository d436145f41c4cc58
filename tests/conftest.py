"""The verifiers support matrix: which Python runs each verifiers version, and how to call it.

The main venv holds verifiers 0.3.1; scripts/test.sh builds venvs for 0.2.0 and 0.4.0 and
exports their interpreters as VERIFIERS_0_2_0_PYTHON / VERIFIERS_0_4_0_PYTHON. Under CI
(CI=true) a missing matrix venv fails the test; elsewhere it is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

MAIN_VERIFIERS = "0.3.1"

# fathom-rlm maps user documents from a folder shared by the machine's processes: the tests and
# the programs they start use one of their own, removed when they end.
_DOCUMENTS = tempfile.TemporaryDirectory(prefix="fathom-rlm-documents-")
os.environ["FATHOM_RLM_DOCUMENT_DIR"] = _DOCUMENTS.name


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


def offline_subprocess_env(**extra: str) -> dict[str, str]:
    """The environment for a test's subprocess: no network beyond loopback, no real keys.

    The hub, datasets, transformers and pip are told to stay offline; `extra` is added on top.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("VIRTUAL_ENV") and "API_KEY" not in key
    }
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PIP_NO_INDEX="1",
        **extra,
    )
    return env


@pytest.fixture(scope="session")
def offline_env() -> Callable[..., dict[str, str]]:
    """`offline_subprocess_env`, for test modules (they cannot import this file)."""
    return offline_subprocess_env


def _offline_env(**extra: str) -> dict[str, str]:
    """The environment for a matrix subprocess: no network beyond loopback.

    The v1 `null` harness prepares a PEP 723 script with `uv` (scripts/test.sh resolves its
    dependencies beforehand, so UV_OFFLINE works) after a `pip install -U uv` that
    PIP_NO_INDEX turns into a no-op check.
    """
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("`uv` must be on PATH: the v1 null harness runs its program through it")
    return offline_subprocess_env(
        UV_OFFLINE="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        POLICY_API_KEY="scripted",
        PATH=os.pathsep.join([str(Path(uv).parent), os.environ.get("PATH", "")]),
        **extra,
    )


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


# --- OpenEnv servers -----------------------------------------------------------------------------


def descendants(root: int) -> dict[int, str]:
    """Live processes below `root` (not `root` itself): pid -> command line."""
    parents: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z":
            parents[int(entry)] = (int(fields[1]), cmd)
    found: dict[int, str] = {}
    frontier = {root}
    while frontier:
        frontier = {pid for pid, (ppid, _) in parents.items() if ppid in frontier}
        found.update({pid: parents[pid][1] for pid in frontier})
    return found


def parent_of(pid: int) -> int:
    """The parent pid of a live process, or -1."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


class OpenEnvServer:
    """An OpenEnv server command running on a free loopback port, temp files under `tmp`."""

    def __init__(self, argv: list[str], tmp: Path, extra_env: dict[str, str]) -> None:
        import httpx

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self.tmp = tmp
        self.url = f"http://127.0.0.1:{port}"
        env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
        env.update(TMPDIR=str(tmp), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", **extra_env)
        # Its output goes to a file: a pipe nobody reads would fill up and stall the server.
        self.log = tmp.parent / f"{tmp.name}.log"
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", *argv, "--port", str(port)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        # openenv-core imports gradio on start-up (~7 s of CPU): generous on a busy machine.
        deadline = time.monotonic() + 600
        while True:
            assert self.proc.poll() is None, self.log.read_text()[-4000:]
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).json() == {"status": "healthy"}:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail("the OpenEnv server did not come up")
            time.sleep(0.2)

    def processes(self) -> dict[int, tuple[int, str]]:
        """The server's live descendants: pid -> (parent pid, command line)."""
        return {pid: (parent_of(pid), cmd) for pid, cmd in descendants(self.proc.pid).items()}

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def stop(self) -> dict[int, str]:
        """SIGTERM the server; return what it had running that is still alive 30 s later."""
        owned = descendants(self.proc.pid)
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        deadline = time.monotonic() + 30
        alive = dict(owned)
        while alive and time.monotonic() < deadline:
            time.sleep(0.2)
            alive = {pid: cmd for pid, cmd in owned.items() if Path(f"/proc/{pid}").exists()}
        for pid in alive:  # report it, but never leave a test's process behind
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        return alive


@pytest.fixture
def openenv_server(tmp_path: Path) -> Iterator[Callable[..., OpenEnvServer]]:
    """Start `python -m <argv> --port P` (an OpenEnv server); stopped at the end of the test."""
    started: list[OpenEnvServer] = []

    def start(argv: list[str], **extra_env: str) -> OpenEnvServer:
        tmp = tmp_path / f"server-tmp-{len(started)}"
        tmp.mkdir()
        started.append(OpenEnvServer(argv, tmp, extra_env))
        return started[-1]

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def module_openenv_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., OpenEnvServer]]:
    """`openenv_server` shared by a module's tests (one start-up, ~10 s of CPU, per module)."""
    started: list[OpenEnvServer] = []

    def start(argv: list[str], **extra_env: str) -> OpenEnvServer:
        tmp = tmp_path_factory.mktemp("server-tmp")
        started.append(OpenEnvServer(argv, tmp, extra_env))
        return started[-1]

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def start_failure(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Callable[..., str]:
    """Run a server command's `main(argv)` in-process with `environ` set (and no bearer token
    unless given): it must exit 2 with one line on stderr before binding; returns the line."""

    def run(main: Callable[[list[str]], None], argv: list[str], environ: dict[str, str]) -> str:
        for name in ("OPENENV_TOKEN", "OPENENV_TOKEN_FILE"):
            monkeypatch.delenv(name, raising=False)
        for name, value in environ.items():
            monkeypatch.setenv(name, value)
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("error: ")
        return err

    return run


# --- Scheduling ----------------------------------------------------------------------------------


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests first (marked `slow`, or a module that shares a server or corpus as an
    `xdist_group`): on 2 workers, one of them started last keeps the run going while the other
    worker sits idle. The order is stable otherwise."""

    def short(item: pytest.Item) -> bool:
        return not (item.get_closest_marker("slow") or item.get_closest_marker("xdist_group"))

    items.sort(key=short)
