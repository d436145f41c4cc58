"""The warm fork server: started once per parent process, it forks one worker per session.

It runs as ``python -I -S`` with an empty environment, imports everything a worker needs,
optionally enters a fresh network namespace, then waits on a unix socket for requests; a spawn
request carries the two pipe ends of a new session and a small JSON config. Other requests:
kill a worker (for a parent without a pidfd), report CPU use, report how a worker ended.

Only the standard library and RestrictedPython are imported here.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import io
import json
import os
import resource
import select
import signal
import socket
import sys
from typing import Any

from . import cells, isolation, protocol, restricted, worker

# Workers cannot open files (Landlock), so every module a helper or a str method might import
# lazily has to be in memory before the fork.
_PRELOAD = (
    "heapq",
    "encodings.latin_1",
    "encodings.utf_16",
    "encodings.utf_32",
    "encodings.ascii",
    "encodings.cp1252",
    "encodings.idna",
    "encodings.unicode_escape",
    "unicodedata",
    "_thread",
)
_WARM_CELL = """
x = re_findall(r'\\w+', doc, 'imsx')
y = re_sub(r'(w)', r'<\\1>', doc) + re_escape('.') + to_json({'a': [1]}, indent=1)
z = re_split(r'a', doc, 1) + re_finditer('a', doc) + most_common(doc, 1) + [counter(doc)]
z += re_finditer(r'\\bawa\\b', doc)
w = '{0:>5}{a:,}'.format(1, a=2) + str(from_json('[1]')) + f'{3.5:.1f}'
print(len(x), y, z, w, sorted(map(str.lower, filter(None, x))))
try:
    {}['k']
except KeyError as e:
    q = e
x
"""


def _warm_up() -> None:
    """Exercise the code paths a worker uses so forked children share the warmed pages."""
    import importlib

    for name in _PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    buffer = restricted.OutputBuffer(100)
    g = restricted.make_globals("warm awa", buffer, lambda p, t="": "")
    compiled = cells.compile_cell(_WARM_CELL)
    exec(compiled.body, g)
    eval(compiled.tail, g)
    cells.describe_exception(KeyError("k"))
    isolation.libc()


# Workers by the token the parent gave at spawn, and back. Only the main loop below touches
# these tables and only it reaps (SIGCHLD merely wakes it up), so no signal handler can change
# them mid-iteration, and a pid found here is an unreaped child: it cannot belong to another
# process.
_LIVE: dict[str, int] = {}
_TOKENS_BY_PID: dict[int, str] = {}
# How recent workers ended, for the parent to tell the model which limit stopped its worker.
_EXITED: collections.OrderedDict[str, dict[str, Any]] = collections.OrderedDict()
_EXITED_KEPT = 4096


def _reap() -> None:
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        token = _TOKENS_BY_PID.pop(pid, None)
        if token is None:
            continue
        _LIVE.pop(token, None)
        _EXITED[token] = {
            "state": "exited",
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "maxrss_kb": usage.ru_maxrss,
        }
        while len(_EXITED) > _EXITED_KEPT:
            _EXITED.popitem(last=False)


def _kill_worker(token: Any) -> None:
    """SIGKILL the worker spawned with `token`, for a parent that has no pidfd for it."""
    pid = _LIVE.get(token) if isinstance(token, str) else None
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _exit_status(token: Any) -> dict[str, Any]:
    _reap()
    if not isinstance(token, str):
        return {"state": "unknown"}
    if token in _LIVE:
        return {"state": "live"}
    return _EXITED.get(token, {"state": "unknown"})


def _cpu_stats() -> dict[str, float]:
    """CPU seconds of this fork server and of every worker it has reaped (benchmarks)."""
    _reap()
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"self": own.ru_utime + own.ru_stime, "children": kids.ru_utime + kids.ru_stime}


def _answer(sock: socket.socket, request: dict[str, Any]) -> None:
    """Requests without file descriptors: kill (no reply), stats and exit status (a reply)."""
    op = request.get("op")
    if op == "kill":
        _kill_worker(request.get("token"))
        return
    if op == "stats":
        reply: dict[str, Any] = _cpu_stats()
    elif op == "exit_status":
        reply = dict(_exit_status(request.get("token")))
    else:
        return
    reply["id"] = request.get("id")
    sock.send(json.dumps(reply).encode())


def _fork_worker(message: bytes, fds: list[int], caps: dict[str, Any]) -> None:
    my_pid = os.getpid()
    try:
        config = json.loads(message)
        token = config.get("token")
        pid = os.fork()
    except Exception:
        for fd in fds:
            os.close(fd)
        return
    if pid == 0:
        code = 0
        try:
            signal.set_wakeup_fd(-1)
            worker.worker_main(fds[0], fds[1], config, my_pid, caps)
        except MemoryError:
            code = protocol.EXIT_OUT_OF_MEMORY
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    if isinstance(token, str):
        _LIVE[token] = pid
        _TOKENS_BY_PID[pid] = token
    for fd in fds:
        os.close(fd)


def _drain(fd: int) -> None:
    with contextlib.suppress(BlockingIOError, InterruptedError):
        while os.read(fd, 4096):
            pass


def zygote_main(control_fd: int, want_netns: bool) -> None:
    sock = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop
    netns = isolation.unshare_network() if want_netns else False
    caps = isolation.probe()
    # Workers are reaped here rather than by the kernel (SIG_IGN) so their CPU time, exit
    # included, adds up in RUSAGE_CHILDREN, which the parent can ask for. The handler does
    # nothing: the interpreter writes the signal to the wake-up pipe and the main loop reaps.
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, _ignore_signal)
    caps["netns"] = netns
    caps["pid"] = os.getpid()
    caps["python"] = sys.version.split()[0]
    # Built once here rather than in every worker (it costs an encoding lookup and new objects
    # per start); it writes to whatever fd 2 is, which each worker points at /dev/null.
    stderr = io.FileIO(worker.STDERR, "w", closefd=False)
    worker.NULL_TEXT = io.TextIOWrapper(stderr, encoding="utf-8")
    _warm_up()
    gc.collect()
    gc.freeze()  # keep the warmed heap out of collections so forked pages stay shared
    sock.send(json.dumps(caps).encode())
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    poller.register(wake_r, select.POLLIN)
    while True:
        ready = dict(poller.poll())
        if wake_r in ready:
            _drain(wake_r)
        _reap()
        if sock.fileno() not in ready:
            continue
        try:
            message, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 4)
        except OSError:
            break
        if not message:
            break  # the parent closed its end (it exited): stop; workers die by pdeathsig
        if len(fds) == 2:
            _fork_worker(message, fds, caps)
            continue
        for fd in fds:
            os.close(fd)
        if not fds:
            with contextlib.suppress(ValueError, OSError):
                request = json.loads(message)
                if isinstance(request, dict):
                    _answer(sock, request)
    os._exit(0)


def _ignore_signal(signum: int, frame: Any) -> None:
    """Python-level SIGCHLD handler: the wake-up fd already carries the news."""
