"""What /proc says about a process, and how an episode's processes leave (with their parent,
and the ROS graph in order)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NoReturn

# When the user's command started and when the `harness` wrapper's set-up check ended
# (time.time_ns), set by the wrapper: the accounting of the user's wait starts there.
INVOKED_NS, SET_UP_NS = 'HARNESS_INVOKED_NS', 'HARNESS_SET_UP_NS'


def _stat_fields(pid: int | str) -> list[str]:
    """The fields of /proc/PID/stat after the command's name (in parentheses, which may hold
    anything): state, ppid, pgrp, ...; [] when it cannot be read (the process has ended)."""
    try:
        return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    except (OSError, IndexError):
        return []


def process_age_s(pid: int | str = 'self') -> float:
    """How long (s) process `pid` has run: its start time after boot (/proc/PID/stat) against
    the boot clock now. 0.0 where that cannot be read."""
    try:
        started = int(_stat_fields(pid)[19]) / os.sysconf('SC_CLK_TCK')  # field 22, in ticks
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (IndexError, ValueError):
        return 0.0


def wrapper_time(name: str, environ: dict | None = None) -> float | None:
    """A time the `harness` wrapper noted (INVOKED_NS, SET_UP_NS) as time.time() seconds; None
    when unset, not a time, or not in the last month."""
    value = (os.environ if environ is None else environ).get(name, '')
    try:
        at = int(value) / 1e9
    except ValueError:
        return None
    return at if 0 <= time.time() - at < 86400 * 30 else None


def process_stopped(pid: int) -> bool:
    """Whether a process is stopped (SIGSTOP, or traced): it will not run until continued."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] in 'Tt'


# Once a group's leader has ended, how long what it left (a recorder closing its bag: stop,
# drain, the MCAP's summary, metadata.yaml) has after a SIGTERM before SIGKILL.
LEFT_BEHIND_GRACE_S = 5.0


def group_members(pgid: int) -> list[int]:
    """The live processes (zombies left out) of process group `pgid`."""
    members = []
    for entry in Path('/proc').iterdir():
        if entry.name.isdigit():
            fields = _stat_fields(entry.name)  # [] once ended meanwhile
            if len(fields) > 2 and fields[0] != 'Z' and fields[2] == str(pgid):
                members.append(int(entry.name))
    return members


def end_group(pgid: int, grace: float = LEFT_BEHIND_GRACE_S) -> None:
    """End process group `pgid` (what is left of it, when its leader has ended): SIGTERM
    first, so that a recorder still closing its bag (it got the same second Ctrl-C, or the
    process that started it died) closes it; SIGKILL for whatever is left after `grace`
    seconds. Nothing is signalled or waited for when the group is empty, as after a leader
    that ended well."""
    if not group_members(pgid):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
        os.killpg(pgid, signal.SIGCONT)  # a stopped member takes its SIGTERM too
    deadline = time.monotonic() + grace
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def handle_as_before(previous: Any, number: int, frame: Any = None) -> None:
    """Signal `number` handled as `previous` (what signal.getsignal gave) would handle it: a
    Python handler is called, SIG_IGN ignores it, SIG_DFL raises KeyboardInterrupt."""
    if callable(previous):
        previous(number, frame)
    elif previous != signal.SIG_IGN:
        raise KeyboardInterrupt


@contextlib.contextmanager
def interrupts_held() -> Iterator[list[int]]:
    """Inside the block a SIGINT (Ctrl-C) is noted in the list yielded, not handled; once the
    block has ended each is handled as the handler before it would have (handle_as_before:
    Python's default raises KeyboardInterrupt; an exception out of the block goes on instead).
    For work that an interrupt must not cut in half (a C extension's import, writing an
    episode's run folder). Only the main thread receives signals: elsewhere, and under a
    handler set outside Python, nothing is held."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None:
        yield held
        return
    signal.signal(signal.SIGINT, lambda number, _frame: held.append(number))
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)
    for number in held:
        handle_as_before(previous, number)


PARENT_POLL_S = 0.2  # how often a process that dies with its parent looks whether it has
# The pid of the process that started this one, set by the starter (child_environment): a
# process whose parent ended before it called die_with_parent would not know it otherwise.
PARENT_PID_VARIABLE = 'HARNESS_PARENT_PID'


def die_with_parent() -> None:
    """End this process (a SIGTERM to itself, which its handler turns into an orderly exit) once
    the process that started it has ended, however that ended; at once when it has ended
    already (it was not the parent named by HARNESS_PARENT_PID). Not Linux's PR_SET_PDEATHSIG:
    that fires when the *thread* that started the child ends, and an MCP server starts an
    episode's kernel from a tool call's worker thread, which ends after 10 idle seconds
    (anyio's): the kernel of a live session ended while its agent thought. A daemon thread
    watches the parent process instead (getppid changes only when the whole process is gone).
    Call it once the SIGTERM handler is installed."""
    parent = os.getppid()
    named = os.environ.pop(PARENT_PID_VARIABLE, '')  # not for this process's own children
    if named.isdigit() and int(named) != parent:
        os.kill(os.getpid(), signal.SIGTERM)
        return

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name='die_with_parent', daemon=True).start()


SHM_DIR = Path('/dev/shm')
# A participant's own segment, `fastdds_<16 hex digits>` (`fastrtps_...` from Fast DDS 2, ROS 2
# Jazzy's; ports, `fastdds_port<N>`, are not), and the suffix of the lock file its owner holds.
DDS_SEGMENT = re.compile(r'(fastdds|fastrtps)_[0-9a-f]{16}')
DDS_LOCK_SUFFIX = '_el'


def dds_segment_of_lock(name: str) -> str | None:
    """The segment whose lock file is named `name`, or None when it is no segment's lock."""
    segment = name.removesuffix(DDS_LOCK_SUFFIX)
    return segment if segment != name and DDS_SEGMENT.fullmatch(segment) else None


def owned_dds_segments(pid: int) -> set[Path]:
    """The Fast DDS shared-memory segments that process `pid` created: those whose lock file it
    holds open, as each participant does for its own while it lives. Empty when the process is
    gone or not this user's."""
    owned = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f'/proc/{pid}/fd'):
            with contextlib.suppress(OSError):
                target = Path(os.readlink(f'/proc/{pid}/fd/{fd}'))
                segment = dds_segment_of_lock(target.name)
                if segment is not None and target.parent == SHM_DIR:
                    owned.add(SHM_DIR / segment)
    return owned


def leave_graph(nodes: Iterable[Any], context: Any) -> None:
    """Destroy `nodes` (rclpy nodes) with each waitable on them that can be destroyed, then shut
    `context` (their rclpy Context) down and destroy it: the goodbye to the other participants,
    and the end of this process's DDS participant. rclpy's `Node.destroy_node` leaves a node's
    action clients and servers alive, and each keeps its node, so the participant outlived the
    rest of the teardown; a process that then left with `leave` never deleted it, and Fast DDS
    keeps a dead participant's shared memory in /dev/shm (8.4 MiB a harness process). Every
    step is tried and the context always ends; the first error is raised after them. For a
    process that ends next: rclpy's default context, destroyed here, stays rclpy's default
    (rclpy.init and rclpy.ok raise in this process afterwards)."""
    errors: list[Exception] = []

    def attempt(step: Any) -> None:
        try:
            step()
        except Exception as exc:  # the other nodes and the context must still go
            errors.append(exc)

    for node in nodes:
        for waitable in list(node.waitables):  # action clients and servers, QoS event handlers
            destroy = getattr(waitable, 'destroy', None)
            if destroy is not None:
                attempt(destroy)
        attempt(node.destroy_node)
    attempt(context.try_shutdown)
    attempt(context.destroy)
    if errors:
        raise errors[0]


def leave(code: int) -> NoReturn:
    """End this process now, without the interpreter's teardown (the renderer's GL context,
    the middleware, thousands of objects: ~0.3-0.5 s that the episode would wait for), as
    multiprocessing's children do. Only for a process whose files are closed and which left the
    ROS graph (`leave_graph`): Python's and C's buffered output is flushed here, nothing else
    runs."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)
    os._exit(code)


def exit_words(code: int) -> str:
    """A process's exit status (as subprocess gives it: -N for a signal) in words: 'exit code
    1', 'killed by SIGKILL', or 'killed by signal 35' for one Python has no name for (a
    real-time signal, which the kernel sends a program whose workspace is full)."""
    if code >= 0:
        return f'exit code {code}'
    try:
        return f'killed by {signal.Signals(-code).name}'
    except ValueError:
        return f'killed by signal {-code}'
