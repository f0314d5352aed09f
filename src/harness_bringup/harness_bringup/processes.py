"""What the graph's child processes (kernel, recorder) inherit: the claimed ROS domain, the
discovery profile, their parent's pid (die_with_parent), numerics on one thread with large
arrays kept in the heap, and none of the model service's secrets."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from harness_types.process import PARENT_PID_VARIABLE

from harness_bringup.domain import use_discovery_profile

# A child of the graph never talks to the model service.
SECRETS = ('ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_BASE_URL')
# numpy's OpenBLAS on one thread (unless the user set it): with a thread per core it splits
# perception's large products (a pass lifts ~330k pixels) and then waits for a core that the
# episode's other processes hold. A kernel's first `pixels` pass in an episode: 114-125 ->
# 92-106 ms, its products alone 36-38 -> 15-28 ms (interleaved lift_cube episodes).
ONE_THREAD = {'OPENBLAS_NUM_THREADS': '1'}
# glibc's malloc maps a block above its mmap threshold (128 KiB at first) on pages of its own
# when the heap's top cannot hold it, and unmaps it when it is freed; the threshold rises only
# as such blocks are freed, and the heap's top goes back to the system beyond the trim
# threshold (twice the mmap threshold once that has risen). A perception pass allocates arrays
# of 1-11 MB, so pass after pass faulted in fresh zeroed pages. With fixed thresholds they stay
# in the heap and are reused: a kernel's first `pixels` pass in lift_cube episodes 103 -> 81 ms
# (medians of 8 interleaved), later passes 69 -> 54 ms; peak memory the same. 32 MiB is the
# most the dynamic threshold reaches on 64-bit and the most glibc before 2.35 accepts (newer
# ones accept more). glibc reads these at a process's start; other C libraries ignore them.
HEAP_ARRAYS = {'MALLOC_MMAP_THRESHOLD_': str(32 * 2**20), 'MALLOC_TRIM_THRESHOLD_': str(2**30)}
# Setting any of these, by variable or tunable, fixes all of glibc's thresholds: a user who sets
# one keeps them all.
THRESHOLDS = ('mmap_threshold', 'trim_threshold', 'top_pad', 'mmap_max')
MALLOC_THRESHOLDS = tuple(f'MALLOC_{name.upper()}_' for name in THRESHOLDS)
THRESHOLD_TUNABLES = tuple(f'glibc.malloc.{name}=' for name in THRESHOLDS)


def numerics_defaults(environ: Mapping[str, str]) -> dict[str, str]:
    """What a process of the episode gets unless `environ` (the user's) says otherwise: numpy's
    BLAS on one thread, large arrays kept in the heap (not when the user sets malloc's
    thresholds, by variable or GLIBC_TUNABLES)."""
    tunables = environ.get('GLIBC_TUNABLES', '').split(':')
    tuned = any(k in environ for k in MALLOC_THRESHOLDS)
    tuned = tuned or any(t.startswith(THRESHOLD_TUNABLES) for t in tunables)
    return ONE_THREAD | ({} if tuned else HEAP_ARRAYS)


def with_numerics_defaults(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` with the `numerics_defaults` it does not set itself."""
    return numerics_defaults(environ) | dict(environ)


def ament_prefix_path(environ: Mapping[str, str], prefix: str) -> str | None:
    """AMENT_PREFIX_PATH with `prefix` (this interpreter's, sys.prefix) first where ROS comes
    from PyPI wheels: the wheels install the ROS packages' share/ (their message definitions,
    which an episode reads) into the venv, but nothing names the venv an ament prefix. None
    when nothing is to change: a sourced ROS installation (ROS_DISTRO set) names its own
    prefixes, and a prefix without an ament index is not one."""
    paths = [p for p in environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    if environ.get('ROS_DISTRO') or prefix in paths:
        return None
    if not os.path.isdir(os.path.join(prefix, 'share', 'ament_index')):
        return None
    return os.pathsep.join([prefix, *paths])


def use_wheels_ament_prefix() -> None:
    """Make this process and the processes it starts find the wheels' ROS packages (see
    ament_prefix_path): `harness` from an activated venv needs no export first."""
    path = ament_prefix_path(os.environ, sys.prefix)
    if path is not None:
        os.environ['AMENT_PREFIX_PATH'] = path


def child_environment(domain_id: int) -> dict[str, str]:
    use_discovery_profile()
    env = {k: v for k, v in with_numerics_defaults(os.environ).items() if k not in SECRETS}
    env['ROS_DOMAIN_ID'] = str(domain_id)
    env[PARENT_PID_VARIABLE] = str(os.getpid())  # die_with_parent: the kernel, the recorder
    return env


def as_episode_process() -> None:
    """Start this process again (once, before it does anything) with the `numerics_defaults`
    the supervisor gives an episode process, unless it has them: for a measurement that runs
    an episode's work in its own process (perf/episode.py, perf/perception.py). Not for a
    program read from stdin (it would be gone) or an interpreter without a command line to run
    again (frozen, embedded): those go on as they are."""
    env = with_numerics_defaults(os.environ)
    again = bool(sys.executable and sys.orig_argv) and not getattr(sys, 'frozen', False)
    again = again and sys.argv[0] not in ('', '-')
    if again and env.keys() != os.environ.keys():
        # orig_argv: the command line as given (`-m module`, `-c code` and the interpreter's
        # own options included), which sys.argv is not
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def wait_or_kill(process: subprocess.Popen, wait_s: float) -> None:
    """Give `process`, already asked to end, `wait_s` to do so; then kill it (stopped with
    SIGSTOP, or stuck) and reap it."""
    try:
        process.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
