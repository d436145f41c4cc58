"""Fixtures for the fathom-rlm adapter tests: the verifiers matrix, the scripted policy server,
a leak-watching runner for CLI subprocesses, and the in-process replay the scores are checked
against.

Matrix cells: legacy on verifiers 0.2.0 and 0.3.1, v1 on 0.3.1 and 0.4.0; the interpreter of
each comes from the `matrix` fixture (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from fathom_runs import DOC_TOKENS, check_scores, replay_scores, v1_traces

if TYPE_CHECKING:
    from fathom_rlm.documents import TaskRecord

API_KEY_VAR = "FATHOM_TEST_KEY"
USER_ROWS = Path(__file__).resolve().parents[1] / "userdata" / "fixtures" / "harbour.jsonl"
"""User rows for the adapters' own-documents runs: the first `USER_ROW_COUNT` (a text row with
evidence and a depth, a number and a year) are served."""
USER_ROW_COUNT = 3

# Runs a command as a child subreaper: whatever the command leaves running (a sandbox fork
# server, a worker) is re-parented to this wrapper instead of init, so it can be listed and
# stopped by PID once the command has exited.
_REAPER = r"""
import ctypes, json, os, signal, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
code = subprocess.call(sys.argv[2:])
def children():
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            out[int(entry)] = cmd
    return out
deadline = time.monotonic() + 5.0  # a fork server exits on EOF; give it a moment
while children() and time.monotonic() < deadline:
    time.sleep(0.1)
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
left = children()
for pid in left:
    os.kill(pid, signal.SIGKILL)
json.dump({"returncode": code, "left_running": list(left.values())}, open(sys.argv[1], "w"))
"""


def subprocess_env(tmp_dir: Path) -> dict[str, str]:
    """A clean environment: no API keys, no hub access, temp files under `tmp_dir`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if "API_KEY" not in k and not k.startswith("VIRTUAL_ENV")
    }
    tmp_dir.mkdir(parents=True, exist_ok=True)
    env.update(
        {
            API_KEY_VAR: "scripted",
            "TMPDIR": str(tmp_dir),
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "UV_OFFLINE": "1",
            "NO_COLOR": "1",
        }
    )
    return env


@dataclass
class CliRun:
    returncode: int
    stdout: str
    stderr: str
    left_running: list[str]
    leftover_tmp: list[str]


def run_cli(argv: list[str], cwd: Path, timeout: float = 900) -> CliRun:
    """Run a CLI under the subreaper wrapper; report what it left running or in its TMPDIR."""
    tmp_dir = cwd / "tmp"
    report = cwd / "reaper.json"
    result = subprocess.run(
        [sys.executable, "-c", _REAPER, str(report), *argv],
        cwd=cwd,
        env=subprocess_env(tmp_dir),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    outcome: dict[str, Any] = json.loads(report.read_text())
    return CliRun(
        outcome["returncode"],
        result.stdout,
        result.stderr,
        outcome["left_running"],
        sorted(p.name for p in tmp_dir.iterdir()),
    )


@pytest.fixture(scope="session")
def eval_rows() -> list[TaskRecord]:
    """The rows the CLIs are asked for (`num_examples=3` at the test length)."""
    from fathom_rlm.documents import build_split

    return build_split("eval", 3, doc_tokens=DOC_TOKENS)


@pytest.fixture(scope="session")
def policy_url(eval_rows: list[TaskRecord]) -> Any:
    """The scripted policy server on loopback, knowing the test rows (their length is not the
    default one it would regenerate by itself)."""
    from fathom_lab.policies import register_tasks

    from envtools.policy_server import policy_server_in_thread

    register_tasks(eval_rows)
    with policy_server_in_thread() as url:
        yield url


@pytest.fixture(scope="session")
def user_rows() -> list[TaskRecord]:
    """The user rows the own-documents runs are asked for (their documents are now in this
    process's store, as the replay needs)."""
    from fathom_rlm.adapters.arguments import FathomArguments
    from fathom_rlm.adapters.scoring import build_rows

    return build_rows(FathomArguments(source=str(USER_ROWS), num_examples=USER_ROW_COUNT))


@pytest.fixture(scope="session")
def user_policy_url() -> Any:
    """The scripted policy server for user rows: the reference reads text it has no grammar for
    by word overlap (as `python -m envtools.policy_server --data` does)."""
    from fathom_lab.ladder.overlap_reader import reading_any_text

    from envtools.policy_server import policy_server_in_thread

    with policy_server_in_thread(scope=reading_any_text) as url:
        yield url


def check_clean(run: CliRun) -> None:
    """The CLI succeeded and left no process running and nothing in its TMPDIR."""
    assert run.returncode == 0, f"CLI failed:\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    assert run.left_running == [], f"processes left running: {run.left_running}"
    assert run.leftover_tmp == [], f"temp files left behind: {run.leftover_tmp}"


def v1_eval_argv(
    cli: Path,
    policy_url: str,
    policy: str,
    rows: int,
    rollouts: int,
    out_dir: Path,
    taskset: tuple[str, ...] = ("--env.taskset.doc-tokens", str(DOC_TOKENS)),
) -> list[str]:
    """A v1 `eval` / `vf-eval` command over the first `rows` rows of the taskset (by default
    the eval split at the test length)."""
    return [
        str(cli),
        "fathom-rlm",
        "-m",
        policy,
        "--client.base-url",
        policy_url,
        "--client.api-key-var",
        API_KEY_VAR,
        "-n",
        str(rows),
        "-r",
        str(rollouts),
        *taskset,
        "--env.taskset.num-examples",
        str(rows),
        "--no-rich",
        "--no-push",
        "-o",
        str(out_dir),
    ]


class AdapterKit:
    """What the adapter tests need, handed out by the `kit` fixture."""

    doc_tokens = DOC_TOKENS
    api_key_var = API_KEY_VAR
    user_rows_path = USER_ROWS
    user_row_count = USER_ROW_COUNT
    run_cli = staticmethod(run_cli)
    replay_scores = staticmethod(replay_scores)
    check_clean = staticmethod(check_clean)
    check_scores = staticmethod(check_scores)
    v1_eval_argv = staticmethod(v1_eval_argv)
    v1_traces = staticmethod(v1_traces)


@pytest.fixture(scope="session")
def kit() -> type[AdapterKit]:
    return AdapterKit
