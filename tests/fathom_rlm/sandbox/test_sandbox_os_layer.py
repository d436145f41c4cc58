"""The OS layer on its own: raw payloads run with plain `exec` inside the confined worker.

`_unsafe_exec_for_tests` bypasses the language layer on purpose (sessions must opt in at
start; sandboxed code cannot send that request). Each test shows one OS restriction holding
even if model code got full Python.
"""

from __future__ import annotations

import asyncio
import os
import textwrap

import pytest
from fathom_rlm.sandbox import SandboxConfig, SandboxSession, isolation_report
from fathom_rlm.sandbox import session as session_module

CONFIG = SandboxConfig(call_timeout_s=3.0, kill_grace_s=0.5)
FAKE_KEY = "sk-fake-test-key-os-layer"
REPORT = isolation_report()


async def _raw(code: str, config: SandboxConfig = CONFIG, document: str = "doc text"):
    async with (
        await SandboxSession.start(document, config=config) as bystander,
        await SandboxSession.start(
            document, config=config, _allow_unsafe_exec_for_tests=True
        ) as attacker,
    ):
        await bystander.run("kept = 'still here'")
        result = await attacker._unsafe_exec_for_tests(textwrap.dedent(code))
        calm = await bystander.run("kept")
        assert calm.output == "'still here'\n", "the other session was disturbed"
        return result


def raw(code: str, config: SandboxConfig = CONFIG) -> str:
    result = asyncio.run(_raw(code, config))
    assert os.environ.get("OPENAI_API_KEY") == FAKE_KEY  # the parent is untouched
    return result.output + (result.error or "")


@pytest.fixture(autouse=True)
def fake_api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)


needs_netns = pytest.mark.skipif(not REPORT["netns"], reason="no network namespace here")
needs_seccomp = pytest.mark.skipif(not REPORT["seccomp"], reason="no seccomp here")
needs_landlock = pytest.mark.skipif(not REPORT["landlock_abi"], reason="no Landlock here")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="uid switch needs root")
NO_FS_LOCK = SandboxConfig(call_timeout_s=3.0, kill_grace_s=0.5, filesystem_lock=False)


# -- network --------------------------------------------------------------------------------


def test_socket_creation_refused() -> None:
    out = raw(
        """
        import socket
        try:
            socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            print('OPEN')
        except OSError as e:
            print('blocked', e.errno)
        """
    )
    assert "blocked" in out and "OPEN" not in out


@needs_netns
def test_network_namespace_alone_has_no_route() -> None:
    config = SandboxConfig(call_timeout_s=3.0, syscall_filter=False)
    out = raw(
        """
        import socket
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(1)
        try:
            s.connect(('192.0.2.1', 80))
            print('CONNECTED')
        except OSError as e:
            print('unreachable', e.errno)
        """,
        config,
    )
    assert "unreachable" in out and "CONNECTED" not in out


@needs_netns
def test_parent_loopback_service_unreachable() -> None:
    async def scenario() -> str:
        hits = []

        async def handle(reader, writer):
            hits.append(1)
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        config = SandboxConfig(call_timeout_s=3.0, syscall_filter=False)
        try:
            result = await _raw(
                f"""
import socket
s = socket.socket()
s.settimeout(1)
try:
    s.connect(('127.0.0.1', {port}))
    print('CONNECTED')
except OSError as e:
    print('unreachable', e.errno)
""",
                config,
            )
        finally:
            server.close()
        assert not hits
        return result.output

    out = asyncio.run(scenario())
    assert "unreachable" in out


@needs_seccomp
def test_seccomp_alone_blocks_sockets() -> None:
    config = SandboxConfig(call_timeout_s=3.0, network="seccomp")
    out = raw(
        """
        import socket
        for family in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):
            try:
                socket.socket(family, socket.SOCK_STREAM)
                print('OPEN', family)
            except PermissionError:
                print('eperm')
        """,
        config,
    )
    assert out.count("eperm") == 3


# -- files ----------------------------------------------------------------------------------


@needs_landlock
def test_world_readable_files_unreadable(tmp_path) -> None:
    gold = tmp_path / "gold.txt"
    gold.write_text("GOLD-OS-CANARY")
    gold.chmod(0o644)
    tmp_path.chmod(0o755)
    out = raw(
        f"""
        for path in ['/etc/passwd', {str(gold)!r}, '/proc/self/environ']:
            try:
                print(open(path).read()[:40])
            except OSError as e:
                print('denied', type(e).__name__)
        """
    )
    assert out.count("denied") == 3
    assert "root:" not in out and "GOLD-OS-CANARY" not in out


@needs_landlock
def test_own_package_source_unreadable() -> None:
    path = session_module.__file__
    out = raw(f"print(open({path!r}).read()[:20])")
    assert "PermissionError" in out


@needs_landlock
def test_directory_listing_denied() -> None:
    out = raw("import os\nprint(os.listdir('/'))")
    assert "PermissionError" in out


@needs_root
def test_root_only_file_unreadable_without_landlock(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("ROOT-ONLY-CANARY")
    secret.chmod(0o600)
    tmp_path.chmod(0o755)
    out = raw(f"print(open({str(secret)!r}).read())", NO_FS_LOCK)
    assert "PermissionError" in out and "ROOT-ONLY-CANARY" not in out


def test_cannot_write_in_working_directory() -> None:
    out = raw("open('note.txt', 'w').write('x')")
    assert "PermissionError" in out


def test_cannot_write_outside_working_directory() -> None:
    path = "/tmp/fathom-attack-write-test"
    try:
        out = raw(f"f = open({path!r}, 'w')\nf.write('x' * 100)\nf.flush()")
        assert "Error" in out
        assert not os.path.exists(path) or os.path.getsize(path) == 0
    finally:
        if os.path.exists(path):
            os.unlink(path)


def test_file_size_limit_without_landlock() -> None:
    path = "/tmp/fathom-attack-fsize-test"
    try:
        out = raw(
            f"""
            f = open({path!r}, 'w')
            try:
                f.write('x' * 100)
                f.flush()
                print('WROTE')
            except OSError as e:
                print('refused', e.errno)
            """,
            NO_FS_LOCK,
        )
        assert "refused 27" in out  # EFBIG: RLIMIT_FSIZE is 0
        assert not os.path.exists(path) or os.path.getsize(path) == 0
    finally:
        if os.path.exists(path):
            os.unlink(path)


def test_working_directory_removed_at_close() -> None:
    async def scenario() -> str:
        session = await SandboxSession.start("d", config=CONFIG, _allow_unsafe_exec_for_tests=True)
        result = await session._unsafe_exec_for_tests("import os\nprint(os.getcwd())")
        cwd = result.output.strip()
        assert os.path.isdir(cwd)
        await session.close()
        return cwd

    cwd = asyncio.run(scenario())
    assert cwd.startswith("/") and not os.path.exists(cwd)


# -- environment and identity ---------------------------------------------------------------


def test_environment_is_empty() -> None:
    out = raw("import os\nprint(dict(os.environ))")
    assert out.strip() == "{}"


def test_fork_server_environment_block_is_empty() -> None:
    # Workers inherit the fork server's initial environment block: it must be empty even
    # though the parent has an API key set.
    raw("pass")
    for server in session_module.SERVERS.values():
        with open(f"/proc/{server.proc.pid}/environ", "rb") as f:
            assert f.read() == b""


@needs_root
def test_parent_environment_unreadable() -> None:
    out = raw(f"print(open('/proc/{os.getpid()}/environ', 'rb').read()[:30])", NO_FS_LOCK)
    assert "PermissionError" in out and FAKE_KEY not in out


@needs_root
def test_runs_as_unprivileged_uid() -> None:
    out = raw("import os\nprint(os.getuid(), os.geteuid(), os.getgid(), os.getgroups())")
    uid, euid, gid, *_ = out.split()
    assert int(uid) != 0 and int(euid) != 0 and int(gid) != 0
    assert "[]" in out


@needs_root
def test_cannot_regain_root() -> None:
    out = raw("import os\nos.setuid(0)")
    assert "PermissionError" in out


def test_cannot_raise_limits() -> None:
    out = raw(
        """
        import resource
        for name in ('RLIMIT_AS', 'RLIMIT_NPROC', 'RLIMIT_NOFILE', 'RLIMIT_CORE'):
            which = getattr(resource, name)
            try:
                resource.setrlimit(which, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
                print('RAISED', name)
            except (ValueError, OSError):
                print('kept', name)
        """
    )
    assert out.count("kept") == 4 and "RAISED" not in out


def test_limits_in_place() -> None:
    out = raw(
        """
        import resource
        for name in ('RLIMIT_CORE', 'RLIMIT_FSIZE', 'RLIMIT_NPROC', 'RLIMIT_NOFILE', 'RLIMIT_AS'):
            print(name, resource.getrlimit(getattr(resource, name)))
        """
    )
    assert "RLIMIT_CORE (0, 0)" in out and "RLIMIT_FSIZE (0, 0)" in out
    assert "RLIMIT_NPROC (1, 1)" in out and "RLIMIT_NOFILE (16, 16)" in out
    assert f"RLIMIT_AS ({1024 * 1024 * 1024}, {1024 * 1024 * 1024})" in out


def test_no_new_privs_and_not_dumpable() -> None:
    out = raw(
        """
        import ctypes
        libc = ctypes.CDLL(None)
        print('nnp', libc.prctl(39, 0, 0, 0, 0), 'dumpable', libc.prctl(3, 0, 0, 0, 0))
        """
    )
    assert "nnp 1 dumpable 0" in out


@needs_seccomp
def test_namespace_escape_syscalls_refused() -> None:
    out = raw(
        """
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        print('unshare', libc.unshare(0x40000000), ctypes.get_errno())
        """
    )
    assert "unshare -1 1" in out  # EPERM from the filter


# -- signals and processes ------------------------------------------------------------------


def test_cannot_signal_parent_or_fork_server() -> None:
    raw("pass")  # make sure a fork server exists
    targets = [os.getpid(), *(server.proc.pid for server in session_module.SERVERS.values())]
    out = raw(
        f"""
        import os, signal
        for pid in {targets!r}:
            try:
                os.kill(pid, signal.SIGKILL)
                print('KILLED', pid)
            except OSError as e:
                print('refused', e.errno)
        """
    )
    assert "KILLED" not in out and "refused" in out
    assert all(server.alive() for server in session_module.SERVERS.values())


def test_kill_everything_reaches_nothing() -> None:
    out = raw(
        """
        import os, signal
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError as e:
            print('refused', e.errno)
        print('survived')
        """
    )
    assert "survived" in out  # and _raw() checked that the other session still answers
    assert all(server.alive() for server in session_module.SERVERS.values())


def test_fork_refused() -> None:
    out = raw("import os\npid = os.fork()\nprint('FORKED' if pid else 'CHILD')")
    assert "BlockingIOError" in out and "FORKED" not in out


def test_fork_bomb_contained() -> None:
    out = raw(
        """
        import os
        made = 0
        for _ in range(1000):
            try:
                if os.fork() == 0:
                    while True:
                        pass
                made += 1
            except OSError:
                pass
        print('made', made)
        """
    )
    assert "made 0" in out


def test_threads_refused() -> None:
    out = raw("import _thread\n_thread.start_new_thread(print, ('THREAD',))")
    assert "can't start new thread" in out or "RuntimeError" in out


def test_subprocess_refused() -> None:
    out = raw("import subprocess\nsubprocess.run(['id'])")
    assert "Error" in out and "uid=" not in out


def test_memory_limit_hit() -> None:
    out = raw("x = bytearray(2 * 1024 ** 3)\nprint('ALLOCATED')")
    assert "MemoryError" in out and "ALLOCATED" not in out


def test_cpu_limit_kills_runaway_worker(unsafe_exec) -> None:
    config = SandboxConfig(call_timeout_s=30.0, cpu_seconds=1)
    # Ignoring SIGALRM defeats the per-call clock; RLIMIT_CPU still ends the worker.
    result, again = unsafe_exec(
        "d",
        "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True: pass",
        config=config,
        then="len(doc)",
    )
    # The model is told which limit stopped the worker, here and in the restart note.
    assert result.error and result.error.startswith("CPULimitError:"), result.error
    assert result.wall_s < 10
    assert again.worker_restarted and again.output.endswith("1\n")
    assert "CPU budget" in again.output


def test_open_descriptors_are_only_the_pipes() -> None:
    out = raw("import os\nprint(sorted(int(f) for f in os.listdir('/proc/self/fd')))", NO_FS_LOCK)
    fds = eval(out.strip().splitlines()[-1])
    assert fds[:3] == [0, 1, 2] and len(fds) <= 4  # the fourth is listdir's own descriptor


def test_stdout_garbage_from_worker_is_contained(unsafe_exec) -> None:
    # A compromised worker writing junk on its protocol pipe only breaks its own session.
    result, again = unsafe_exec(
        "d",
        "import os, time\nos.write(1, b'\\xff\\xff\\xff\\xffJgarbage')\ntime.sleep(5)",
        config=CONFIG,
        then="1 + 1",
    )
    assert result.error and "SandboxCrash" in result.error
    assert again.output.endswith("2\n")
