"""The serving scope of a process (`fathom_rlm.serving`): sandbox working directories live under
its scratch root; a clean close removes everything; a SIGKILLed process leaves nothing behind
either (its janitor removes the root, its fork server and sandbox exit with it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Opens the scope, starts a real sandbox session, reports what it made, then either closes the
# scope (argv[1] == "close") or waits to be killed.
_CHILD = r"""
import asyncio, json, os, sys, tempfile
from fathom_rlm.sandbox import SandboxSession
from fathom_rlm.serving import close_serving_scope, open_serving_scope

async def main():
    scope = open_serving_scope()
    session = await SandboxSession.start("some document text")
    result = await session.run("print(len(doc))")
    report = {"root": scope.root, "janitor": scope.janitor.pid, "output": result.output,
              "workdirs": os.listdir(scope.root), "tempdir": tempfile.gettempdir()}
    if sys.argv[1] == "close":
        await session.close()
        close_serving_scope()
        report["tempdir_after"] = tempfile.gettempdir()
    print(json.dumps(report), flush=True)
    if sys.argv[1] != "close":
        await asyncio.sleep(600)

asyncio.run(main())
"""


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(entry))
    return found


def _start(mode: str, tmp_path: Path) -> tuple[subprocess.Popen[str], dict]:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, mode], env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, f"the child failed (exit {proc.wait()})"
    return proc, json.loads(line)


def _wait_gone(paths: list[Path], pids: set[int], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(p.exists() for p in paths) and not any(
            Path(f"/proc/{pid}").exists() for pid in pids
        ):
            return
        time.sleep(0.1)
    left = [str(p) for p in paths if p.exists()]
    alive = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    pytest.fail(f"left behind: {left} {alive}")


def test_close_removes_root_and_restores_tempdir(tmp_path: Path) -> None:
    proc, report = _start("close", tmp_path)
    assert proc.wait(timeout=60) == 0
    assert report["output"].strip() == str(len("some document text"))
    # The sandbox's working directory was created under the scope's root.
    assert [name.startswith("fathom-sandbox-") for name in report["workdirs"]] == [True]
    assert report["tempdir"] == report["root"]
    assert report["tempdir_after"] == str(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_killed_process_leaves_nothing(tmp_path: Path) -> None:
    proc, report = _start("wait", tmp_path)
    owned = _children(proc.pid)  # the janitor and the fork server
    grandchildren = set().union(*(_children(pid) for pid in owned))  # the sandbox worker
    assert report["janitor"] in owned and len(owned) == 2, owned
    assert len(grandchildren) == 1
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _wait_gone([Path(report["root"])], owned | grandchildren)
    assert list(tmp_path.iterdir()) == []
