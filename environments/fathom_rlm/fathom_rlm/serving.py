"""What one serving process owns for its rollouts, released with the process even when it is killed.

A process that hosts fathom-rlm rollouts (a verifiers env-server worker, an OpenEnv server, an
in-process eval) holds two things beyond its rollouts: the sandbox fork server (one per process,
started on the first sandbox) and the sandboxes' working directories. A clean exit closes both;
a killed process cannot, and its fork server and sandbox workers already die with it (the fork
server exits when its socket to the parent closes, workers by parent-death signal), but its
working directories would stay behind.

`open_serving_scope()` therefore gives the process a scratch root that every sandbox working
directory of the process is created under (by pointing `tempfile.tempdir` at it), and starts a
janitor: a tiny process blocked reading a pipe from this one, which removes the root once the
pipe closes, that is when this process exits for any reason, SIGKILL included.
`close_serving_scope()` is the clean path: it stops the fork server, removes the root, lets the
janitor go and restores `tempfile.tempdir`. Both are idempotent; the scope is per process (a
forked or spawned child opens its own).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass

# Waits for EOF on stdin (the serving process has exited), then removes the root. `-I -S` keeps
# its start cheap and free of the caller's environment.
_JANITOR = (
    "import shutil, sys\nsys.stdin.buffer.read()\nshutil.rmtree(sys.argv[1], ignore_errors=True)\n"
)


@dataclass
class ServingScope:
    """The open scope of this process."""

    pid: int
    root: str
    """Scratch directory; the process's sandbox working directories are created under it."""
    janitor: subprocess.Popen[bytes]
    previous_tempdir: str | None


_SCOPE: ServingScope | None = None
_LOCK = threading.Lock()


def open_serving_scope() -> ServingScope:
    """This process's scope, opened on first use (cheap: one directory and one small process)."""
    global _SCOPE
    with _LOCK:
        if _SCOPE is not None and _SCOPE.pid == os.getpid():
            return _SCOPE
        root = tempfile.mkdtemp(prefix=f"fathom-serving-{os.getpid()}-")
        # Sandbox workers run as another uid and must be able to enter their own directory.
        os.chmod(root, 0o711)
        janitor = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _JANITOR, root],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={},
            cwd="/",
            # Its own session: a Ctrl-C or a signal to this process group must not stop the
            # janitor before it has cleaned up.
            start_new_session=True,
        )
        _SCOPE = ServingScope(os.getpid(), root, janitor, tempfile.tempdir)
        tempfile.tempdir = root
        return _SCOPE


def close_serving_scope() -> None:
    """Stop the fork server and sandboxes of this process and remove its scratch root."""
    global _SCOPE
    from fathom_rlm.sandbox import shutdown_fork_servers

    with _LOCK:
        scope, _SCOPE = _SCOPE, None
    shutdown_fork_servers()
    if scope is None or scope.pid != os.getpid():
        return
    tempfile.tempdir = scope.previous_tempdir
    shutil.rmtree(scope.root, ignore_errors=True)
    with contextlib.suppress(OSError):
        if scope.janitor.stdin is not None:
            scope.janitor.stdin.close()
    try:
        scope.janitor.wait(timeout=10)
    except subprocess.TimeoutExpired:
        scope.janitor.kill()
        scope.janitor.wait()
