"""The station's folder of perception passes shared between its processes (the verifier's eyes
and the kernel: harness_perception.shared_passes): made in the temporary directory for this
user alone, removed with the graph, and noted in a warm station's folder so that whoever
replaces a station that was killed removes it. Its name holds the process that made it: a
process killed before it removed its folder (a `harness run` or `harness mcp` that got
SIGKILL) leaves it to the next one made, which removes it."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from harness_bringup.program_workspace import is_temporary_folder

PREFIX = 'harness-passes-'
NOTE = 'passes_folder'  # in a warm station's folder


def new_passes_folder() -> Path:
    """A new, empty folder (mkdtemp's mode 0700: this user's alone) named after this process;
    first, the folders that outlived theirs are removed (`remove_abandoned_passes_folders`)."""
    remove_abandoned_passes_folders()
    return Path(tempfile.mkdtemp(prefix=f'{PREFIX}{os.getpid()}-'))


def remove_abandoned_passes_folders() -> list[Path]:
    """Remove the passes folders of the temporary directory that belong to this user and
    whose process (named in the folder's name) no longer runs; the paths removed. A folder
    whose name names no process (made before names held one) is left alone, and so is one
    whose process number was reused since: it goes once that process ended too."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f'{PREFIX}*'):
        pid = owner_of(path.name)
        if pid is None or pid == os.getpid():
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not _runs(pid):
            remove_passes_folder(path)
            removed.append(path)
    return removed


def owner_of(name: str) -> int | None:
    """The process a passes folder's name holds ('harness-passes-<pid>-<random>'), or None."""
    pid, dash, _ = name.removeprefix(PREFIX).partition('-')
    return int(pid) if name.startswith(PREFIX) and dash and pid.isdecimal() else None


def _runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
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
