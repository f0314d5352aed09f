"""The program process's sandbox, applied by the process to itself before it runs any program.

Layers, outermost first (each reported in `Sandbox`):
1. a fresh minimal environment (set by whoever starts the process: no keys, no ROS variables);
2. started as root: new network and mount namespaces (no network at all, not even loopback:
   the channel to the kernel is an inherited socket), then an unprivileged uid and gid of its
   own. Folders that other users may not pass on the way to what the program needs (a pyenv
   Python under a 0700 /root, a workspace under pytest's 0700 base folder) are opened in its
   own mount namespace only: an empty tmpfs covers such a folder and only the entries on the
   way are bound back into it, so the rest of the folder stays hidden and nothing changes
   outside. Started unprivileged: a user + network namespace when the kernel allows it. The
   program never runs as root;
3. Landlock: reads only beneath the allowed paths (the Python installation and the API's
   packages, not the bench's tasks, reference programs or other runs), writes only beneath
   the workspace, nothing executed, no TCP, and (ABI >= 6) no signals to and no abstract Unix
   sockets of processes outside its own domain;
4. resource limits: address space, file size, open files, no core dumps, no new processes;
5. PR_SET_PDEATHSIG: it dies with the kernel node that started it;
6. a seccomp filter that allows a list of system calls and refuses every other one: file I/O
   in what Landlock lets it reach, memory, time, its own signals, poll/select, and messages on
   the sockets it already holds. Among what it refuses: new processes and threads, exec,
   ptrace, mounts and namespaces, new sockets (socketpair of Unix stream sockets excepted: no
   connect or sendto to any socket file, no network family), io_uring, memfd_create,
   fallocate (a GB of blocks in milliseconds, between two looks at the workspace's quota),
   personality, prctl, setting attributes (chmod, chown, utime, xattrs), the uid and
   capabilities, keys, bpf, perf, and the fcntl/ioctl commands that make the kernel signal a
   process or type into a terminal. Signals go only to itself and prlimit64 only to itself.
Everything refused fails with EPERM (clone3 with ENOSYS, so that libc falls back to clone and
is refused there).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import resource
import signal
import stat
import struct
import sys
from dataclasses import dataclass, field

_libc = ctypes.CDLL(None, use_errno=True)

# Landlock ---------------------------------------------------------------------------------
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE = 1 << 4, 1 << 5
MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = (
    1 << n for n in range(6, 13)
)
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
_WRITES = (
    WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_CHAR
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_BLOCK
    | MAKE_SYM
)

# prctl, namespaces, mounts, seccomp -------------------------------------------------------
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS = 1, 38
_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
_MAX_OPENED = 32  # closed folders opened in the mount namespace, at most
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO, _SECCOMP_RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0
_AUDIT_ARCH = {'x86_64': 0xC000003E, 'aarch64': 0xC00000B7}
_AF_UNIX = 1
# Allowed system calls: name -> (x86_64 number, aarch64 number; None where it does not exist).
# Everything else is refused. Read from the kernel's unistd headers; grouped: file I/O, files
# and folders, memory, signals and timers, time, this process's ids and limits, threads' own
# bookkeeping (no new thread can start), waiting on descriptors, messages on held sockets.
_ALLOWED = {
    'read': (0, 63), 'write': (1, 64), 'readv': (19, 65), 'writev': (20, 66),
    'pread64': (17, 67), 'pwrite64': (18, 68), 'preadv': (295, 69), 'pwritev': (296, 70),
    'preadv2': (327, 286), 'pwritev2': (328, 287), 'lseek': (8, 62), 'close': (3, 57),
    'close_range': (436, 436), 'dup': (32, 23), 'dup2': (33, None), 'dup3': (292, 24),
    'flock': (73, 32), 'fsync': (74, 82),
    'fdatasync': (75, 83), 'sync_file_range': (277, 84), 'fadvise64': (221, 223),
    'readahead': (187, 213), 'sendfile': (40, 71), 'copy_file_range': (326, 285),
    'open': (2, None), 'openat': (257, 56), 'openat2': (437, 437), 'creat': (85, None),
    'stat': (4, None), 'fstat': (5, 80), 'lstat': (6, None), 'newfstatat': (262, 79),
    'statx': (332, 291), 'statfs': (137, 43), 'fstatfs': (138, 44), 'access': (21, None),
    'faccessat': (269, 48), 'faccessat2': (439, 439), 'readlink': (89, None),
    'readlinkat': (267, 78), 'getdents': (78, None), 'getdents64': (217, 61),
    'getcwd': (79, 17), 'chdir': (80, 49), 'fchdir': (81, 50), 'mkdir': (83, None),
    'mkdirat': (258, 34), 'rmdir': (84, None), 'unlink': (87, None), 'unlinkat': (263, 35),
    'rename': (82, None), 'renameat': (264, 38), 'renameat2': (316, 276), 'link': (86, None),
    'linkat': (265, 37), 'symlink': (88, None), 'symlinkat': (266, 36), 'truncate': (76, 45),
    'ftruncate': (77, 46), 'umask': (95, 166),
    'getxattr': (191, 8), 'lgetxattr': (192, 9), 'fgetxattr': (193, 10),
    'listxattr': (194, 11), 'llistxattr': (195, 12), 'flistxattr': (196, 13),
    'mmap': (9, 222), 'munmap': (11, 215), 'mremap': (25, 216), 'mprotect': (10, 226),
    'brk': (12, 214), 'madvise': (28, 233), 'msync': (26, 227), 'mincore': (27, 232),
    'rt_sigaction': (13, 134), 'rt_sigprocmask': (14, 135), 'rt_sigreturn': (15, 139),
    'rt_sigpending': (127, 136), 'rt_sigtimedwait': (128, 137), 'rt_sigsuspend': (130, 133),
    'sigaltstack': (131, 132), 'restart_syscall': (219, 128), 'pause': (34, None),
    'alarm': (37, None), 'setitimer': (38, 103), 'getitimer': (36, 102),
    'timer_create': (222, 107), 'timer_settime': (223, 110), 'timer_gettime': (224, 108),
    'timer_getoverrun': (225, 109), 'timer_delete': (226, 111),
    'timerfd_create': (283, 85), 'timerfd_settime': (286, 86), 'timerfd_gettime': (287, 87),
    'clock_gettime': (228, 113), 'clock_getres': (229, 114), 'clock_nanosleep': (230, 115),
    'nanosleep': (35, 101), 'gettimeofday': (96, 169), 'time': (201, None), 'times': (100, 153),
    'getpid': (39, 172), 'getppid': (110, 173), 'gettid': (186, 178), 'getuid': (102, 174),
    'geteuid': (107, 175), 'getgid': (104, 176), 'getegid': (108, 177),
    'getgroups': (115, 158), 'getresuid': (118, 148), 'getresgid': (120, 150),
    'getpgid': (121, 155), 'getpgrp': (111, None), 'getsid': (124, 156), 'uname': (63, 160),
    'sysinfo': (99, 179), 'getrusage': (98, 165), 'getrlimit': (97, 163),
    'setrlimit': (160, 164), 'getpriority': (140, 141), 'sched_getaffinity': (204, 123),
    'sched_yield': (24, 124), 'sched_getparam': (143, 121), 'sched_getscheduler': (145, 120),
    'sched_getattr': (315, 275), 'getcpu': (309, 168), 'getrandom': (318, 278),
    'exit': (60, 93), 'exit_group': (231, 94), 'wait4': (61, 260), 'waitid': (247, 95),
    'futex': (202, 98), 'futex_waitv': (449, 449), 'set_robust_list': (273, 99),
    'get_robust_list': (274, 100), 'rseq': (334, 293), 'set_tid_address': (218, 96),
    'arch_prctl': (158, None),
    'poll': (7, None), 'ppoll': (271, 73), 'select': (23, None), 'pselect6': (270, 72),
    'epoll_create': (213, None), 'epoll_create1': (291, 20), 'epoll_ctl': (233, 21),
    'epoll_wait': (232, None), 'epoll_pwait': (281, 22), 'epoll_pwait2': (441, 441),
    'eventfd': (284, None), 'eventfd2': (290, 19), 'pipe': (22, None), 'pipe2': (293, 59),
    'recvfrom': (45, 207), 'sendto': (44, 206), 'recvmsg': (47, 212), 'sendmsg': (46, 211),
    'recvmmsg': (299, 243), 'sendmmsg': (307, 269), 'shutdown': (48, 210),
    'getsockname': (51, 204), 'getpeername': (52, 205), 'getsockopt': (55, 209),
    'setsockopt': (54, 208),
}  # fmt: skip
# Allowed only with this process's own pid as their first argument (0 too for prlimit64: the
# caller). Signals to any other process, and other processes' limits, are refused.
_OWN_PID_ONLY = {
    'kill': (62, 129), 'tkill': (200, 130), 'tgkill': (234, 131),
    'rt_sigqueueinfo': (129, 138), 'rt_tgsigqueueinfo': (297, 240), 'prlimit64': (302, 261),
}  # fmt: skip
_SOCKETPAIR = (53, 199)  # allowed for Unix stream sockets only
_SOCK_STREAM, _SOCK_FLAGS = 1, 0x800 | 0x80000  # SOCK_NONBLOCK | SOCK_CLOEXEC
# fcntl and ioctl, allowed but for the commands that make the kernel signal a process the
# program names (F_SETOWN, F_SETSIG, F_SETOWN_EX; FIOSETOWN, SIOCSPGRP), take a lease
# (F_SETLEASE: a signal to the lease breaker's victim) or type into a terminal (TIOCSTI).
_COMMAND_REFUSED = {
    'fcntl': ((72, 25), (8, 10, 15, 1024)),
    'ioctl': ((16, 29), (0x8901, 0x8902, 0x5412)),
}
_ARCH_INDEX = {'x86_64': 0, 'aarch64': 1}
_CLONE3 = {'x86_64': 435, 'aarch64': 435}


class IsolationError(RuntimeError):
    """A layer the sandbox requires could not be applied."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of the program process."""

    memory_mb: int = 4096  # address space
    file_size_mb: int = 64  # largest file it may write
    open_files: int = 256


@dataclass
class Sandbox:
    """What was applied, for the kernel's log and the tests."""

    uid: int = -1
    network_namespace: bool = False
    user_namespace: bool = False
    mount_namespace: bool = False
    opened: list[str] = field(default_factory=list)  # closed folders opened in its namespace
    landlock_abi: int = 0
    scoped: bool = False  # signals and abstract sockets scoped to the domain (ABI >= 6)
    tcp_blocked: bool = False
    seccomp: bool = False
    limits: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise IsolationError(f'{what} failed: {os.strerror(err)}')


def landlock_abi() -> int:
    abi = _libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(0, abi)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ('handled_access_fs', ctypes.c_uint64),
        ('handled_access_net', ctypes.c_uint64),
        ('scoped', ctypes.c_uint64),
    ]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [('allowed_access', ctypes.c_uint64), ('parent_fd', ctypes.c_int32)]


def _landlock(read_paths: list[str], write_paths: list[str], report: Sandbox) -> None:
    abi = landlock_abi()
    if abi < 1:
        raise IsolationError('Landlock is not available on this kernel; refusing to run programs')
    fs = EXECUTE | READ_FILE | READ_DIR | _WRITES
    fs |= (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)
    fs |= IOCTL_DEV if abi >= 5 else 0
    net = (NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0
    attr = _RulesetAttr(fs, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise IsolationError(f'landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}')
    readable = READ_FILE | READ_DIR
    writable = readable | (fs & ~(EXECUTE | READ_FILE | READ_DIR | IOCTL_DEV))
    rules = [(p, readable) for p in read_paths] + [(p, writable) for p in write_paths]
    try:
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except FileNotFoundError:
                continue
            try:
                if not os.path.isdir(path):
                    access &= READ_FILE | WRITE_FILE | TRUNCATE
                rule = _PathBeneath(access, fd)
                _check(
                    _libc.syscall(
                        _SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0
                    ),
                    f'landlock_add_rule({path})',
                )
            finally:
                os.close(fd)
        _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 'prctl(NO_NEW_PRIVS)')
        _check(_libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0), 'landlock_restrict_self')
    finally:
        os.close(ruleset)
    report.landlock_abi, report.tcp_blocked, report.scoped = abi, bool(net), bool(scoped)


def _ancestors(path: str) -> list[str]:
    """The folders above `path`, outermost first ('/' included)."""
    parts = path.strip(os.sep).split(os.sep)
    return [os.sep + os.path.join(*parts[:k]) if k else os.sep for k in range(len(parts))]


def _ways(paths: list[str]) -> list[str]:
    """Each path as written and as resolved (a link's way in crosses the folders above the
    link too)."""
    return sorted({w for p in paths for w in (os.path.abspath(p), os.path.realpath(p))})


def _closed(folder: str) -> bool:
    return os.path.isdir(folder) and not os.stat(folder).st_mode & 0o001


def _reachable_by_others(path: str) -> bool:
    """Whether a user that owns nothing here may pass through every folder above `path`, as
    written and as resolved."""
    return not any(_closed(d) for way in _ways([path]) for d in _ancestors(way))


def _readable_by_others(paths: list[str]) -> bool:
    """Whether every one of `paths` can be read by a user that owns nothing here."""
    for path in paths:
        if not _reachable_by_others(path):
            return False
        if os.path.exists(path) and not os.stat(path).st_mode & 0o004:
            return False
    return True


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = '') -> None:
    encode = lambda v: v.encode() if v is not None else None  # noqa: E731
    _check(
        _libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data or None)),
        f'mount({target})',
    )


def _first_closed(paths: list[str]) -> tuple[str, set[str]] | None:
    """The first folder above one of `paths` that other users may not pass, and the names
    beneath it on the way to each path that crosses it; None when every way is open."""
    ways = _ways(paths)
    wanted = set(ways)  # a folder read whole is never covered (its error comes later)
    for way in ways:
        for d in _ancestors(way):
            if d not in wanted and _closed(d):
                below = d.rstrip(os.sep) + os.sep
                return d, {w[len(below) :].split(os.sep)[0] for w in ways if w.startswith(below)}
    return None


def _open_ways(paths: list[str], report: Sandbox) -> None:
    """In this process's own mount namespace, make every folder above `paths` passable by other
    users: a closed folder is covered by an empty tmpfs (0755) and only the entries on the way
    are bound back into it. The folder itself, outside this namespace, is not changed."""
    for _ in range(_MAX_OPENED):
        found = _first_closed(paths)
        if found is None:
            return
        folder, names = found
        if folder == os.sep:
            raise IsolationError('the root folder / is closed to other users')
        held = {}
        try:
            for name in sorted(names):
                with contextlib.suppress(FileNotFoundError):
                    held[name] = os.open(os.path.join(folder, name), os.O_PATH | os.O_CLOEXEC)
            _mount('tmpfs', folder, 'tmpfs', _MS_NOSUID | _MS_NODEV, 'mode=0755,size=64k')
            for name, fd in held.items():
                target = os.path.join(folder, name)
                if stat.S_ISDIR(os.fstat(fd).st_mode):
                    os.mkdir(target)
                else:
                    os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
                _mount(f'/proc/self/fd/{fd}', target, None, _MS_BIND | _MS_REC)
        finally:
            for fd in held.values():
                os.close(fd)
        report.opened.append(folder)
    raise IsolationError(f'more than {_MAX_OPENED} closed folders on the way to the program')


def _namespaces_and_uid(uid: int, workspace: str, readable: list[str], report: Sandbox) -> None:
    if os.geteuid() == 0:
        _check(_libc.unshare(_CLONE_NEWNET | _CLONE_NEWNS), 'unshare(network, mount namespaces)')
        report.network_namespace = report.mount_namespace = True
        # Nothing of this namespace's mounts reaches the machine's.
        _mount(None, os.sep, None, _MS_REC | _MS_PRIVATE)
        _open_ways([*readable, workspace], report)
        unreadable = [p for p in readable if not _readable_by_others([p])]
        if unreadable or not _reachable_by_others(workspace):
            what = unreadable[0] if unreadable else workspace
            raise IsolationError(
                f'{what} cannot be read by other users, so the program cannot run as its own '
                'uid: make it readable (chmod o+rX), or set up the workspace with a Python '
                'installation other users can read'
            )
        os.chown(workspace, uid, uid)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        if 0 in os.getresuid() or 0 in os.getresgid():
            raise IsolationError('could not leave root')
        report.uid = os.getuid()
        return
    report.uid = os.getuid()
    if _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0:
        report.user_namespace = report.network_namespace = True
    else:
        report.notes.append(
            'no network namespace: unprivileged user namespaces are not allowed here '
            '(Landlock still blocks TCP, and the seccomp filter every new socket)'
        )


def _limits(limits: Limits, report: Sandbox) -> None:
    mb = 1024 * 1024
    settings = {
        'RLIMIT_AS': limits.memory_mb * mb,
        'RLIMIT_FSIZE': limits.file_size_mb * mb,
        'RLIMIT_NOFILE': limits.open_files,
        'RLIMIT_CORE': 0,
        'RLIMIT_NPROC': 0,
    }
    for name, value in settings.items():
        which = getattr(resource, name)
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))
        report.limits[name] = value
    # Writing past RLIMIT_FSIZE raises SIGXFSZ, which would kill the process: make it an error.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def _bpf(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack('HBBI', code, jt, jf, k & 0xFFFFFFFF)


_LD_W_ABS, _JEQ, _JGE, _RET, _ALU_AND_K = 0x20, 0x15, 0x35, 0x06, 0x54


def _seccomp(report: Sandbox) -> None:
    arch = platform.machine()
    if arch not in _AUDIT_ARCH:
        raise IsolationError(f'no seccomp filter for architecture {arch}; refusing to run programs')
    index = _ARCH_INDEX[arch]
    allowed = sorted({n[index] for n in _ALLOWED.values() if n[index] is not None})
    eperm = _SECCOMP_RET_ERRNO | errno.EPERM
    prog = [
        _bpf(_LD_W_ABS, 4),  # seccomp_data.arch
        _bpf(_JEQ, _AUDIT_ARCH[arch], 1, 0),
        _bpf(_RET, _SECCOMP_RET_KILL_PROCESS),
        _bpf(_LD_W_ABS, 0),  # seccomp_data.nr
    ]
    if arch == 'x86_64':  # the x32 ABI's numbers: refused
        prog += [_bpf(_JGE, 0x40000000, 0, 1), _bpf(_RET, eperm)]
    prog += [_bpf(_JEQ, _CLONE3[arch], 0, 1), _bpf(_RET, _SECCOMP_RET_ERRNO | errno.ENOSYS)]
    for nr in allowed:
        prog += [_bpf(_JEQ, nr, 0, 1), _bpf(_RET, _SECCOMP_RET_ALLOW)]
    # kill, tgkill, prlimit64, ...: only this process itself (its pid, or 0 for prlimit64).
    pid = os.getpid()
    for name, numbers in _OWN_PID_ONLY.items():
        zero_too = name == 'prlimit64'
        prog += [
            _bpf(_JEQ, numbers[index], 0, 5),
            _bpf(_LD_W_ABS, 16),  # args[0], low 32 bits (a pid is an int)
            _bpf(_JEQ, pid, 2, 0),
            _bpf(_JEQ, 0, 1 if zero_too else 0, 0),
            _bpf(_RET, eperm),
            _bpf(_RET, _SECCOMP_RET_ALLOW),
        ]
    # socketpair(domain, type, ...): Unix stream sockets only (a datagram socket could be
    # sent to any socket file by name). socket() itself is refused: the channel is the one
    # socket a program needs, so no socket file or network can be reached.
    prog += [
        _bpf(_JEQ, _SOCKETPAIR[index], 0, 7),
        _bpf(_LD_W_ABS, 16),  # args[0], low 32 bits
        _bpf(_JEQ, _AF_UNIX, 0, 4),
        _bpf(_LD_W_ABS, 24),  # args[1], low 32 bits
        _bpf(_ALU_AND_K, ~_SOCK_FLAGS),
        _bpf(_JEQ, _SOCK_STREAM, 0, 1),
        _bpf(_RET, _SECCOMP_RET_ALLOW),
        _bpf(_RET, eperm),
    ]
    for numbers, commands in _COMMAND_REFUSED.values():
        n = len(commands)
        prog += [_bpf(_JEQ, numbers[index], 0, n + 3), _bpf(_LD_W_ABS, 24)]  # args[1]
        prog += [_bpf(_JEQ, c, n - k, 0) for k, c in enumerate(commands)]
        prog += [_bpf(_RET, _SECCOMP_RET_ALLOW), _bpf(_RET, eperm)]
    prog.append(_bpf(_RET, eperm))
    raw = b''.join(prog)
    buffer = ctypes.create_string_buffer(raw, len(raw))

    class _Fprog(ctypes.Structure):
        _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]

    fprog = _Fprog(len(prog), ctypes.cast(buffer, ctypes.c_void_p))
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 'prctl(NO_NEW_PRIVS)')
    _check(
        _libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0),
        'prctl(SECCOMP)',
    )
    report.seccomp = True


def python_read_paths() -> list[str]:
    """What a Python program needs to read: the interpreter's standard library and
    site-packages, shared libraries, and a few device files."""
    paths = {
        os.path.realpath(p)
        for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)
    }
    paths |= {os.path.realpath(p) for p in sys.path if 'site-packages' in p and os.path.isdir(p)}
    paths |= {'/usr/lib', '/usr/lib64', '/lib', '/lib64', '/usr/share/zoneinfo'}
    paths |= {'/dev/null', '/dev/urandom', '/dev/zero'}
    return sorted(paths)


def apply(
    workspace: str, read_paths: list[str], uid: int, limits: Limits, parent_pid: int
) -> Sandbox:
    """Apply every layer to this process (see the module docstring); IsolationError when a
    required one cannot be applied. `read_paths` are the extra readable paths (the API's
    packages); `uid` is the unprivileged uid to become when started as root."""
    report = Sandbox()
    readable = python_read_paths() + list(read_paths)
    _namespaces_and_uid(uid, workspace, [p for p in readable if os.path.exists(p)], report)
    # Cleared by the uid change, so set after it; then make sure the parent did not die first.
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), 'prctl(PDEATHSIG)')
    if os.getppid() != parent_pid:
        raise IsolationError('the kernel node ended before the program process was ready')
    _landlock(readable, [workspace], report)
    _limits(limits, report)
    _seccomp(report)
    return report
