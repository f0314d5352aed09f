"""The shared memory that ended Fast DDS participants left in /dev/shm, and its removal.

Each participant (each process of an episode: 8.4 MiB with fastdds_profile.xml) maps a segment
of its own and holds an exclusive `flock` on its lock file while it lives (their names:
harness_types.process.DDS_SEGMENT). A participant deleted in
order unlinks both; one whose process was killed (a supervisor's SIGKILL, the OOM killer, a
crash) leaves them, and Fast DDS never removes another process's segment: a machine running
thousands of episodes filled its RAM with them (/dev/shm is a tmpfs). A segment whose lock
nobody holds has no living owner, as `fastdds shm clean` also decides. Ports
(`fastdds_port<N>`) are not touched: live participants open and lock existing ports' files at
any time, and there are a few per domain, not one per process. The supervisor sweeps before
each episode, and `harness mcp` when it starts, which removes what the killed processes of
earlier runs left.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness_types.process import SHM_DIR, dds_segment_of_lock

# A lock file younger than this may be one whose participant is still creating it (the file
# exists a moment before its owner's flock): it is left for a later sweep.
MIN_AGE_S = 5.0


@dataclass(frozen=True)
class Sweep:
    """What one sweep removed: segments and their bytes."""

    segments: int = 0
    bytes: int = 0

    def describe(self) -> str:
        return (
            f'removed {self.segments} shared-memory segment{"s" * (self.segments != 1)} '
            f'({self.bytes / 2**20:.0f} MiB) that ended DDS participants left in /dev/shm'
        )


def _owned_lock(path: Path) -> int | None:
    """An open descriptor holding `path`'s exclusive lock, or None when a living process holds
    it (or the file cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def remove_dead_segments(
    shm_dir: Path = SHM_DIR, min_age_s: float = MIN_AGE_S, now: float | None = None
) -> Sweep:
    """Remove the segments (and lock files) of this user's ended participants in `shm_dir`:
    those whose lock file is older than `min_age_s` and locked by no process."""
    now = time.time() if now is None else now
    uid = os.geteuid()
    segments = size = 0
    try:
        names = os.listdir(shm_dir)
    except OSError:  # no /dev/shm (another OS, a container without one): nothing to sweep
        return Sweep()
    for name in names:
        segment_name = dds_segment_of_lock(name)
        if segment_name is None:
            continue
        lock = shm_dir / name
        try:
            info = lock.lstat()
        except OSError:
            continue
        if info.st_uid != uid or now - info.st_mtime < min_age_s:
            continue
        fd = _owned_lock(lock)
        if fd is None:
            continue
        try:
            segment = shm_dir / segment_name
            with contextlib.suppress(OSError):
                bytes_ = segment.lstat().st_size
                segment.unlink()
                segments, size = segments + 1, size + bytes_
            with contextlib.suppress(OSError):
                lock.unlink()
        finally:
            os.close(fd)
    return Sweep(segments, size)


def sweep(say: Callable[[str], None]) -> None:
    """Remove the ended participants' segments of /dev/shm and say what went; housekeeping
    that never fails its caller (the supervisor before each episode, `harness mcp` at start)."""
    try:
        swept = remove_dead_segments()
        if swept.segments:
            say(swept.describe())
    except Exception as exc:
        with contextlib.suppress(Exception):
            say(f'/dev/shm not swept: {exc}')
