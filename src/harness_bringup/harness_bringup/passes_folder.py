"""The station's folder of perception passes shared between its processes (the verifier's eyes
and the kernel: harness_perception.shared_passes): made in the temporary directory for this
user alone, removed with the graph, and noted in a warm station's folder so that whoever
replaces a station that was killed removes it."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

from harness_bringup.program_workspace import is_temporary_folder

PREFIX = 'harness-passes-'
NOTE = 'passes_folder'  # in a warm station's folder


def new_passes_folder() -> Path:
    """A new, empty folder (mkdtemp's mode 0700: this user's alone)."""
    return Path(tempfile.mkdtemp(prefix=PREFIX))


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
