"""Isolation of the kernel process: Landlock for enforcement, an audit hook for clear messages.

After `isolate(workspace)`:
- writes (create, modify, delete, rename, truncate) succeed only beneath `workspace` and /dev
  (DDS shared memory in /dev/shm, /dev/null); everything else, the Python installation and the
  harness source included, is read-only;
- executing any file fails, so no process can be started (subprocess, os.system, exec);
- TCP bind/connect fail where the kernel supports it (Landlock ABI >= 4): no model or web calls.
  DDS (UDP and shared memory) keeps working, so the API still reaches the skill server.
What it does NOT do: limit reads (a program can read any file the user can), memory or CPU (the
cell timeout bounds time), or UDP; and already-open file descriptors stay usable. Landlock is
irreversible for the process and inherited by any thread.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_PR_SET_NO_NEW_PRIVS = 38
_RULE_PATH_BENEATH = 1
_CREATE_RULESET_VERSION = 1

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
REMOVE_DIR, REMOVE_FILE = 1 << 4, 1 << 5
MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = (
    1 << n for n in range(6, 13)
)
REFER, TRUNCATE = 1 << 13, 1 << 14
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1

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


class IsolationError(RuntimeError):
    """Landlock is unavailable or refused the rules."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [('handled_access_fs', ctypes.c_uint64), ('handled_access_net', ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [('allowed_access', ctypes.c_uint64), ('parent_fd', ctypes.c_int32)]


@dataclass(frozen=True)
class Isolation:
    workspace: str
    abi: int
    network: bool  # TCP is blocked too


def landlock_abi() -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    abi = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION)
    return max(0, abi)


def isolate(workspace: str) -> Isolation:
    """Restrict this process (see the module docstring). Raises IsolationError if impossible."""
    libc = ctypes.CDLL(None, use_errno=True)
    abi = landlock_abi()
    if abi < 1:
        raise IsolationError(
            'Landlock is not available on this kernel; refusing to run programs unisolated'
        )
    fs = EXECUTE | _WRITES | (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)
    net = (NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0
    attr = _RulesetAttr(fs, net)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 4 else 8
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0)
    if ruleset < 0:
        raise IsolationError(f'landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}')
    try:
        writable = fs & ~EXECUTE
        for path in (workspace, '/dev'):
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = _PathBeneath(writable, fd)
                if libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0):
                    raise IsolationError(
                        f'landlock_add_rule({path}) failed: {os.strerror(ctypes.get_errno())}'
                    )
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0):
            raise IsolationError(f'prctl(NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}')
        if libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0):
            raise IsolationError(
                f'landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}'
            )
    finally:
        os.close(ruleset)
    sys.addaudithook(_messages(os.path.realpath(workspace)))
    return Isolation(workspace, abi, bool(net))


def _messages(workspace: str):
    """An audit hook that turns forbidden actions into errors that say what is allowed."""
    processes = (
        'subprocess.Popen',
        'os.system',
        'os.exec',
        'os.fork',
        'os.forkpty',
        'os.posix_spawn',
        'os.spawn',
        'pty.spawn',
    )

    def hook(event: str, args: tuple) -> None:
        if event.startswith(processes):
            raise PermissionError(f'programs cannot start processes ({event}); use the API')
        if event == 'open' and len(args) >= 2:
            path, mode = args[0], args[1]
            writing = isinstance(mode, str) and any(c in mode for c in 'wax+')
            if isinstance(mode, int):
                writing = bool(mode & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC))
            if writing and isinstance(path, str | bytes):
                real = os.path.realpath(os.fsdecode(path))
                if not (
                    real == workspace
                    or real.startswith(workspace + os.sep)
                    or real.startswith('/dev/')
                ):
                    raise PermissionError(
                        f'programs may write only inside their workspace {workspace}, not {real}'
                    )

    return hook
