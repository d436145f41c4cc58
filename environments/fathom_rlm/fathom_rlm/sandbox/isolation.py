"""OS layer: the kernel features that confine a worker, and how to tell which ones work here.

Everything is standard library (ctypes against the C library, raw syscall numbers), so it runs
in the warm parent process with no third-party code. Each feature is optional: detection
reports what this machine supports, and a worker applies whatever is available.

- network namespace (unshare CLONE_NEWNET) for the warm parent: every worker forked from it
  sees only a loopback interface that is down;
- rlimits (address space, CPU, file size, open files, processes, core dumps);
- an unprivileged uid/gid (rlimits such as RLIMIT_NPROC are not enforced for root);
- no_new_privs, not dumpable, parent-death signal;
- Landlock with no allowed paths: no file can be opened, read, written or executed, and
  (kernel ABI >= 6) no signal or abstract unix socket reaches outside the worker;
- a seccomp filter returning EPERM for socket creation and kernel-attack-surface syscalls.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import signal
import socket
import struct
from typing import Any

_libc: Any = None


def libc() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2

# Landlock syscalls share one number on every architecture (the unified syscall table).
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1


def _check(rc: int, what: str) -> None:
    if rc < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


# ---------------------------------------------------------------------------------------------
# Network namespace (applied once, to the warm parent)
# ---------------------------------------------------------------------------------------------


def unshare_network() -> bool:
    """Move this process into a fresh network namespace. True on success."""
    lib = libc()
    if lib.unshare(CLONE_NEWNET) == 0:
        return True
    if os.geteuid() == 0:
        return False
    # Unprivileged: a user namespace grants the right to create the network namespace.
    uid, gid = os.geteuid(), os.getegid()
    if lib.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
        return False
    try:
        with open("/proc/self/setgroups", "w") as f:
            f.write("deny")
        with open("/proc/self/uid_map", "w") as f:
            f.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as f:
            f.write(f"{gid} {gid} 1")
    except OSError:
        pass  # identity maps are cosmetic here; the namespace is what matters
    return True


def network_reachable() -> bool:
    """Whether a routed (non-loopback) destination is reachable; sends no packet."""
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    except OSError:
        return False
    try:
        s.connect(("192.0.2.1", 9))  # TEST-NET-1: routing decision only, UDP sends nothing
        return True
    except OSError:
        return False
    finally:
        s.close()


# ---------------------------------------------------------------------------------------------
# Landlock
# ---------------------------------------------------------------------------------------------


def landlock_abi() -> int:
    """Landlock ABI version supported by the kernel, 0 when unavailable."""
    try:
        rc = libc().syscall(
            SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), LANDLOCK_CREATE_RULESET_VERSION
        )
    except Exception:
        return 0
    return int(rc) if rc > 0 else 0


def apply_landlock(abi: int) -> None:
    """Deny every filesystem access right this ABI knows, and scope signals/abstract sockets.

    Rights are checked at open time, so descriptors already open (the pipes) keep working.
    Requires no_new_privs (or CAP_SYS_ADMIN).
    """
    if abi <= 0:
        raise OSError(errno.ENOSYS, "landlock unavailable")
    fs_bits = {1: 13, 2: 14, 3: 15, 4: 15}.get(abi, 16)
    handled_fs = (1 << fs_bits) - 1
    handled_net = 0b11 if abi >= 4 else 0  # bind_tcp, connect_tcp
    scoped = 0b11 if abi >= 6 else 0  # abstract unix sockets, signals
    if abi >= 6:
        attr = struct.pack("QQQ", handled_fs, handled_net, scoped)
    elif abi >= 4:
        attr = struct.pack("QQ", handled_fs, handled_net)
    else:
        attr = struct.pack("Q", handled_fs)
    buf = ctypes.create_string_buffer(attr, len(attr))
    lib = libc()
    fd = lib.syscall(SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), 0)
    _check(fd, "landlock_create_ruleset")
    try:
        _check(lib.syscall(SYS_LANDLOCK_RESTRICT_SELF, int(fd), 0), "landlock_restrict_self")
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# seccomp (a hand-assembled classic BPF filter)
# ---------------------------------------------------------------------------------------------

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7

# Syscalls answered with EPERM. socket/socketpair stop networking even without a namespace;
# the rest is kernel attack surface a text-processing worker never needs.
_DENIED = {
    "x86_64": {
        "socket": 41,
        "socketpair": 53,
        "ptrace": 101,
        "personality": 135,
        "pivot_root": 155,
        "chroot": 161,
        "acct": 163,
        "mount": 165,
        "umount2": 166,
        "swapon": 167,
        "swapoff": 168,
        "reboot": 169,
        "init_module": 175,
        "delete_module": 176,
        "kexec_load": 246,
        "add_key": 248,
        "request_key": 249,
        "keyctl": 250,
        "unshare": 272,
        "perf_event_open": 298,
        "name_to_handle_at": 303,
        "open_by_handle_at": 304,
        "setns": 308,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "finit_module": 313,
        "kexec_file_load": 320,
        "bpf": 321,
        "userfaultfd": 323,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
    },
    "aarch64": {
        "socket": 198,
        "socketpair": 199,
        "ptrace": 117,
        "personality": 92,
        "pivot_root": 41,
        "chroot": 51,
        "acct": 89,
        "mount": 40,
        "umount2": 39,
        "swapon": 224,
        "swapoff": 225,
        "reboot": 142,
        "init_module": 105,
        "delete_module": 106,
        "kexec_load": 104,
        "add_key": 217,
        "request_key": 218,
        "keyctl": 219,
        "unshare": 97,
        "perf_event_open": 241,
        "name_to_handle_at": 264,
        "open_by_handle_at": 265,
        "setns": 268,
        "process_vm_readv": 270,
        "process_vm_writev": 271,
        "finit_module": 273,
        "kexec_file_load": 294,
        "bpf": 280,
        "userfaultfd": 282,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "open_tree": 428,
        "move_mount": 429,
        "fsopen": 430,
        "fsconfig": 431,
        "fsmount": 432,
        "fspick": 433,
        "mount_setattr": 442,
    },
}
_ARCH_TOKEN = {"x86_64": AUDIT_ARCH_X86_64, "aarch64": AUDIT_ARCH_AARCH64}

_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_JGE_K = 0x35
_BPF_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_X32_SYSCALL_BIT = 0x40000000


def seccomp_arch() -> str | None:
    machine = platform.machine()
    return machine if machine in _DENIED else None


def _seccomp_program(block_network: bool) -> tuple[bytes, int]:
    arch = seccomp_arch()
    if arch is None:
        raise OSError(errno.ENOSYS, f"no seccomp syscall table for {platform.machine()}")
    numbers = sorted(
        nr
        for name, nr in _DENIED[arch].items()
        if block_network or name not in ("socket", "socketpair")
    )
    prog: list[tuple[int, int, int, int]] = [
        (_BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (_BPF_JEQ_K, 1, 0, _ARCH_TOKEN[arch]),
        (_BPF_RET_K, 0, 0, _RET_KILL_PROCESS),  # another ABI (e.g. int 0x80): refuse outright
        (_BPF_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    checks: list[tuple[int, int]] = []
    if arch == "x86_64":
        checks.append((_BPF_JGE_K, _X32_SYSCALL_BIT))  # the x32 ABI aliases every syscall
    checks.extend((_BPF_JEQ_K, nr) for nr in numbers)
    deny_index = len(prog) + len(checks) + 1
    for op, k in checks:
        prog.append((op, deny_index - len(prog) - 1, 0, k))
    prog.append((_BPF_RET_K, 0, 0, _RET_ALLOW))
    prog.append((_BPF_RET_K, 0, 0, _RET_ERRNO | errno.EPERM))
    return b"".join(struct.pack("HBBI", *ins) for ins in prog), len(prog)


def apply_seccomp(block_network: bool) -> None:
    """Install the filter on this process (needs no_new_privs first)."""
    blob, count = _seccomp_program(block_network)
    filt = ctypes.create_string_buffer(blob, len(blob))

    class SockFprog(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))

    fprog = SockFprog(count, ctypes.addressof(filt))
    _check(
        libc().prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0),
        "seccomp",
    )


def seccomp_works() -> bool:
    """Fork a throwaway child that installs the filter and checks socket() is refused."""
    if seccomp_arch() is None:
        return False
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            set_no_new_privs()
            apply_seccomp(block_network=True)
            try:
                socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()
            except PermissionError:
                code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


# ---------------------------------------------------------------------------------------------
# Process credentials and limits (applied in each forked worker)
# ---------------------------------------------------------------------------------------------


def set_no_new_privs() -> None:
    _check(libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def set_not_dumpable() -> None:
    _check(libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable")


def set_parent_death_signal(expected_parent: int) -> None:
    """SIGKILL this process when its parent dies (set after setuid: a uid change clears it)."""
    _check(libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    if os.getppid() != expected_parent:  # the parent died before the flag was set
        os._exit(1)


def apply_rlimits(
    *, memory_mb: int, cpu_seconds: int, open_files: int, processes: int, file_size: int = 0
) -> None:
    """Soft and hard limits together, so the worker cannot raise them again."""
    limits = [
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_FSIZE, file_size),
        (resource.RLIMIT_NOFILE, open_files),
        (resource.RLIMIT_NPROC, processes),
        (resource.RLIMIT_AS, memory_mb * 1024 * 1024),
        (resource.RLIMIT_MEMLOCK, 0),
        (resource.RLIMIT_MSGQUEUE, 0),
    ]
    for which, value in limits:
        resource.setrlimit(which, (value, value))
    # SIGXCPU at the soft limit, SIGKILL one second later at the hard limit.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))


def drop_privileges(uid: int, gid: int) -> None:
    """Irreversibly become uid/gid with no supplementary groups."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise OSError(errno.EPERM, "uid switch did not take effect")


def probe() -> dict[str, Any]:
    """What this process can apply (run in the warm parent after its namespace set-up)."""
    return {
        "root": os.geteuid() == 0,
        "landlock_abi": landlock_abi(),
        "seccomp": seccomp_works(),
        "seccomp_arch": seccomp_arch(),
        "network_reachable": network_reachable(),
        "kernel": platform.release(),
    }
