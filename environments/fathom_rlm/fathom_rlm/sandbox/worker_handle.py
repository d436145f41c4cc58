"""Parent side: what a session holds of one worker process, and how it lets go of it.

A worker runs model code, so the parent keeps everything needed to stop it and clean up after
it in one handle (pid or pidfd, its fork server, its pipes' transports, its working directory),
shared with a garbage-collection finalizer so nothing is left behind when a session is dropped
without being closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import signal
from dataclasses import dataclass, field
from typing import Any

from . import protocol, replies
from .launcher import ForkServer, SandboxError

_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_PIPE_DEFAULT = 64 * 1024
_PIPE_MAX = 1 << 20  # the usual unprivileged ceiling (/proc/sys/fs/pipe-max-size)

# Every working directory created and not yet removed (tests check it ends empty).
WORKDIRS: set[str] = set()


@dataclass
class WorkerHandle:
    """What must be released when a worker goes away; shared with the GC finalizer."""

    pid: int | None = None
    pidfd: int | None = None
    server: ForkServer | None = None  # the worker's parent: kills it when there is no pidfd
    token: str | None = None  # names the worker to its fork server
    workdir: str | None = None
    transports: list[Any] = field(default_factory=list)

    def kill(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        elif self.token is not None and self.server is not None and self.server.alive():
            # No pidfd (old kernel, pidfd_open failed, or no greeting yet). If the server is
            # gone, so is the worker (parent-death signal).
            with contextlib.suppress(OSError):
                self.server.kill(self.token)

    def release(self) -> None:
        self.kill()
        for transport in self.transports:
            with contextlib.suppress(Exception):
                transport.close()
        self.transports.clear()
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            WORKDIRS.discard(self.workdir)
            self.workdir = None


def last_resort(handle: WorkerHandle) -> None:
    # Runs at garbage collection or interpreter exit when close() was never awaited. It may run
    # off the event loop's thread, so it only signals and removes files; it leaves transports.
    handle.transports.clear()
    handle.release()


class WorkerGone(Exception):
    """The worker's pipe closed (it exited or was killed)."""


class ServerDied(Exception):
    """The fork server died while a worker was being started on it."""


READ_ERRORS = (
    WorkerGone,
    replies.ProtocolViolation,
    asyncio.IncompleteReadError,
    ConnectionError,
)


async def worker_exit_status(server: ForkServer | None, token: str | None) -> dict[str, Any]:
    """The fork server's report on how the worker `token` ended (see replies.describe_death)."""
    if server is None or token is None:
        return {"state": "unknown"}
    if not server.alive():
        return {"state": "server-gone"}
    try:
        return await asyncio.to_thread(server.exit_status, token, 1.0)
    except SandboxError:
        return {"state": "server-gone"}


async def wait_exit(pidfd: int, timeout: float) -> None:
    """Wait until the process behind `pidfd` has exited (a pidfd turns readable then)."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    loop.add_reader(pidfd, lambda: done.done() or done.set_result(None))
    try:
        async with asyncio.timeout(timeout):
            await done
    except TimeoutError:
        pass
    finally:
        loop.remove_reader(pidfd)


def send_document(write_transport: asyncio.WriteTransport, document: str) -> None:
    """Write the document frame to a new worker's pipe."""
    header, payload = protocol.encode_doc(document)
    if len(payload) > _PIPE_DEFAULT:
        # Room for the whole document: one write here and one read in the worker, instead of
        # a wake-up on both sides per 64 KB. Pages are only used while data sits in the pipe.
        with contextlib.suppress(OSError):
            fcntl.fcntl(
                write_transport.get_extra_info("pipe").fileno(),
                _F_SETPIPE_SZ,
                min(len(payload) + len(header), _PIPE_MAX),
            )
    write_transport.write(header)
    write_transport.write(payload)
