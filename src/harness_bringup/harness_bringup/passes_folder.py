"""The station's folder of perception passes shared between its processes (the verifier's eyes
and the kernel: harness_perception.shared_passes): made in the temporary directory for this
user alone, removed with the graph, and noted in a warm station's folder so that whoever
replaces a station that was killed removes it. The process that made it holds a lock on the
folder's OWNER file while it lives: a folder whose lock is free was left by a process killed
before it could remove it (a `harness run` or `harness mcp` that got SIGKILL), and the next
folder made removes it. A lock, not the maker's process number, because it is freed only by
that process's end, whatever reuses its number or shares the temporary directory."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness_bringup.program_workspace import is_temporary_folder

PREFIX = 'harness-passes-'
NOTE = 'passes_folder'  # in a warm station's folder
OWNER = '.owner'  # in the passes folder: locked by the process that made it while it lives


@dataclass
class PassesFolder:
    """A passes folder this process made and holds (`lock`: the descriptor of its locked OWNER
    file) until `remove`."""

    path: Path
    lock: int

    def remove(self) -> None:
        remove_passes_folder(self.path)
        with contextlib.suppress(OSError):
            os.close(self.lock)


def new_passes_folder() -> PassesFolder:
    """A new, empty folder (mkdtemp's mode 0700: this user's alone), held by this process;
    first, the folders whose maker ended without removing them are removed
    (`remove_abandoned_passes_folders`)."""
    remove_abandoned_passes_folders()
    path = Path(tempfile.mkdtemp(prefix=PREFIX))
    # Locked under another name, then renamed: an OWNER file is never seen unlocked while
    # its maker lives.
    locking = path / f'{OWNER}.new'
    lock = os.open(locking, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        os.replace(locking, path / OWNER)
    except OSError:
        os.close(lock)
        remove_passes_folder(path)
        raise
    return PassesFolder(path, lock)


def remove_abandoned_passes_folders() -> list[Path]:
    """Remove the passes folders of the temporary directory that belong to this user and whose
    OWNER file's lock is free (their maker ended); the paths removed. A folder without an
    OWNER file (made before folders had one, or being made this moment) is left alone, and so
    is anything that is not a folder (a link)."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f'{PREFIX}*'):
        if _abandoned(path):
            remove_passes_folder(path)
            if not path.exists():
                removed.append(path)
    return removed


def _abandoned(path: Path) -> bool:
    try:
        info = path.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            return False
        lock = os.open(path / OWNER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # held: its maker runs
        return False
    finally:
        os.close(lock)
    return True


def note_passes_folder(station_folder: Path, path: Path) -> None:
    (station_folder / NOTE).write_text(f'{path}\n')


def remove_passes_folder(path: Path) -> None:
    """Remove `path` and what it holds. Twice: a killed station's kernel (station_runner's
    retirement does not wait for it) may write a last pass between the first removal's
    listing and its end."""
    for _ in range(2):
        shutil.rmtree(path, ignore_errors=True)


def remove_noted_passes_folder(station_folder: Path) -> None:
    """Remove the passes folder noted in `station_folder`, on the note's word only when it
    names a passes folder of the temporary directory."""
    with contextlib.suppress(OSError):
        path = Path((station_folder / NOTE).read_text().strip())
        if is_temporary_folder(path, PREFIX):
            remove_passes_folder(path)
