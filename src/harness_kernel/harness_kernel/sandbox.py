"""The program process's sandbox, applied by the process to itself before it runs any program.

Layers, outermost first (each reported in `Sandbox`):
1. a fresh minimal environment (set by whoever starts the process: no keys, no ROS variables);
2. started as root: a new network namespace (no network at all, not even loopback: the
   channel to the kernel is an inherited socket), then an unprivileged uid and gid of its
   own, or, when the Python installation is not readable by other users (a pyenv under
   /root), uid 0 with every capability dropped (bounding, permitted, effective, inheritable,
   ambient); started unprivileged: a user + network namespace when the kernel allows it;
3. Landlock: reads only beneath the allowed paths (the Python installation and the API's
   packages, not the bench's tasks, reference programs or other runs), writes only beneath
   the workspace, nothing executed, no TCP, and (ABI >= 6) no signals to and no abstract Unix
   sockets of processes outside its own domain;
4. resource limits: address space, file size, open files, no core dumps, no new processes;
5. PR_SET_PDEATHSIG: it dies with the kernel node that started it;
6. a seccomp filter: no new processes or threads (fork, vfork, clone, clone3), no exec
   (execve, execveat), no ptrace, mount, namespaces, reboot, kernel modules, keyrings, bpf,
   perf, other processes' memory, no new session or process group (it stays in the
   episode's process group), no sockets but Unix ones (no raw or packet sockets), no signals
   to any process but itself, no chmod, chown or extended attributes.
Everything that is refused fails with EPERM (clone3 with ENOSYS, so that libc falls back to
clone and is refused there).
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import signal
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

# prctl, namespaces, seccomp -----------------------------------------------------------------
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS, _PR_SET_DUMPABLE = 1, 38, 4
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO, _SECCOMP_RET_KILL_PROCESS = 0x7FFF0000, 0x00050000, 0
_AUDIT_ARCH = {'x86_64': 0xC000003E, 'aarch64': 0xC00000B7}
_AF_UNIX = 1
# Refused system calls: name -> (x86_64 number, aarch64 number; None where it does not exist).
_REFUSED = {
    'fork': (57, None), 'vfork': (58, None), 'clone': (56, 220), 'execve': (59, 221),
    'execveat': (322, 281), 'ptrace': (101, 117), 'mount': (165, 40), 'umount2': (166, 39),
    'pivot_root': (155, 41), 'chroot': (161, 51), 'reboot': (169, 142),
    'kexec_load': (246, 104), 'kexec_file_load': (320, 294), 'init_module': (175, 105),
    'finit_module': (313, 273), 'delete_module': (176, 106), 'setns': (308, 268),
    'unshare': (272, 97), 'bpf': (321, 280), 'perf_event_open': (298, 241),
    'keyctl': (250, 219), 'add_key': (248, 217), 'request_key': (249, 218),
    'process_vm_readv': (310, 270), 'process_vm_writev': (311, 271), 'setsid': (112, 157),
    'setpgid': (109, 154), 'userfaultfd': (323, 282), 'mknod': (133, None),
    'mknodat': (259, 33), 'iopl': (172, None), 'ioperm': (173, None), 'swapon': (167, 224),
    'swapoff': (168, 225), 'acct': (163, 89), 'settimeofday': (164, 170),
    'clock_settime': (227, 112), 'open_by_handle_at': (304, 265),
    'name_to_handle_at': (303, 264), 'fsopen': (430, 430), 'fsmount': (432, 432),
    'move_mount': (429, 429), 'open_tree': (428, 428), 'pidfd_getfd': (438, 438),
    'kcmp': (312, 272), 'pidfd_open': (434, 434), 'pidfd_send_signal': (424, 424),
    'chmod': (90, None), 'fchmod': (91, 52), 'fchmodat': (268, 53), 'fchmodat2': (452, 452),
    'chown': (92, None), 'fchown': (93, 55), 'lchown': (94, None), 'fchownat': (260, 54),
    'setxattr': (188, 5), 'lsetxattr': (189, 6), 'fsetxattr': (190, 7),
    'removexattr': (197, 14), 'lremovexattr': (198, 15), 'fremovexattr': (199, 16),
    'setxattrat': (463, 463), 'removexattrat': (466, 466), 'capset': (126, 91),
    'setuid': (105, 146), 'setgid': (106, 144), 'setreuid': (113, 145),
    'setregid': (114, 143), 'setresuid': (117, 147), 'setresgid': (119, 149),
    'setgroups': (116, 159), 'setfsuid': (122, 151), 'setfsgid': (123, 152),
}  # fmt: skip
# Signals: allowed only with this process's own pid as their first argument.
_SIGNALS = {
    'kill': (62, 129), 'tkill': (200, 130), 'tgkill': (234, 131),
    'rt_sigqueueinfo': (129, 138), 'rt_tgsigqueueinfo': (297, 240),
}  # fmt: skip
_ARCH_INDEX = {'x86_64': 0, 'aarch64': 1}
_CLONE3 = {'x86_64': 435, 'aarch64': 435}
_SOCKET = {'x86_64': (41, 53), 'aarch64': (198, 199)}  # socket, socketpair


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


def _reachable_by_others(path: str) -> bool:
    """Whether a user that owns nothing here may pass through every folder above `path`, as
    written and as resolved (a link's way in crosses the folders above the link too)."""
    for way in {os.path.abspath(path), os.path.realpath(path)}:
        parts = way.split(os.sep)
        for k in range(1, len(parts)):
            d = os.sep + os.path.join(*parts[1:k]) if k > 1 else os.sep
            if os.path.isdir(d) and not os.stat(d).st_mode & 0o001:
                return False
    return True


def _readable_by_others(paths: list[str]) -> bool:
    """Whether every one of `paths` can be read by a user that owns nothing here."""
    for path in paths:
        if not _reachable_by_others(path):
            return False
        if os.path.exists(path) and not os.stat(path).st_mode & 0o004:
            return False
    return True


def _drop_capabilities() -> None:
    """Every capability out of every set, for good (the process stays uid 0)."""
    for cap in range(64):
        if _libc.prctl(24, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break  # PR_CAPBSET_DROP: past the last capability this kernel has
    _libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
    header = struct.pack('Ii', 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # two (effective, permitted, inheritable) triples, all empty
    capset = _REFUSED['capset'][_ARCH_INDEX.get(platform.machine(), 0)]
    _check(_libc.syscall(capset, header, data), 'capset')
    with open('/proc/self/status') as status:
        effective = [ln for ln in status if ln.startswith('CapEff:')]
    if effective and int(effective[0].split()[1], 16) != 0:
        raise IsolationError('capabilities are still effective after dropping them')


def _namespaces_and_uid(uid: int, workspace: str, readable: list[str], report: Sandbox) -> None:
    if os.geteuid() == 0:
        _check(_libc.unshare(_CLONE_NEWNET), 'unshare(network namespace)')
        report.network_namespace = True
        # The unprivileged uid needs the Python installation and a way into the workspace (it
        # is made its own): a folder above either that others may not enter (a root-only
        # home's Python, a workspace under pytest's 0700 base folder) keeps uid 0. Root is not
        # held by RLIMIT_NPROC; the seccomp filter's refusal of fork, clone and exec is what
        # keeps such a program to one process.
        python_open = _readable_by_others(readable)
        if python_open and _reachable_by_others(workspace):
            os.chown(workspace, uid, uid)
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.getuid() == 0 or os.geteuid() == 0:
                raise IsolationError('could not leave root')
        else:
            why = (
                'the Python installation is not readable by other users'
                if not python_open
                else f'other users may not enter a folder above the workspace {workspace}'
            )
            report.notes.append(f'uid 0 kept without capabilities: {why}')
            _drop_capabilities()
        report.uid = os.getuid()
        return
    report.uid = os.getuid()
    if _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0:
        report.user_namespace = report.network_namespace = True
    else:
        report.notes.append(
            'no network namespace: unprivileged user namespaces are not allowed here '
            '(Landlock still blocks TCP)'
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


_LD_W_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06


def _seccomp(report: Sandbox) -> None:
    arch = platform.machine()
    if arch not in _AUDIT_ARCH:
        report.notes.append(f'no seccomp filter for architecture {arch}')
        return
    index = _ARCH_INDEX[arch]
    refused = sorted(n[index] for n in _REFUSED.values() if n[index] is not None)
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
    for nr in refused:
        prog += [_bpf(_JEQ, nr, 0, 1), _bpf(_RET, eperm)]
    # kill, tgkill, ...: only this process itself (its pid as the process argument).
    pid = os.getpid()
    for numbers in _SIGNALS.values():
        prog += [
            _bpf(_JEQ, numbers[index], 0, 4),
            _bpf(_LD_W_ABS, 16),  # args[0], low 32 bits
            _bpf(_JEQ, pid, 1, 0),
            _bpf(_RET, eperm),
            _bpf(_LD_W_ABS, 0),
        ]
    # socket(domain, ...) and socketpair(domain, ...): Unix sockets only.
    for nr in _SOCKET[arch]:
        prog += [
            _bpf(_JEQ, nr, 0, 3),
            _bpf(_LD_W_ABS, 16),  # args[0], low 32 bits
            _bpf(_JEQ, _AF_UNIX, 1, 0),
            _bpf(_RET, eperm),
            _bpf(_LD_W_ABS, 0),
        ]
    prog.append(_bpf(_RET, _SECCOMP_RET_ALLOW))
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
