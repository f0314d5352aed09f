"""The folder a program works in during its episode, and how its files reach the run folder.

The program works in a folder of the temporary directory whose name says nothing (the run
folder's name holds the task, layout and seed, which the program's working directory must not
tell it). When the kernel stops, the files move into the run folder's `workspace/`. Its path is
also noted in the run folder (`.program_workspace`), so that the supervisor can move them in
when the episode process was killed before it could: an episode that fails for any reason
still keeps what its program wrote, and leaves no folder behind.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path

PREFIX = 'harness-program-'
# In a warm station's folder: the program folder it started for its next episode (removed by
# whoever replaces a station that was killed).
NEXT_PROGRAM_FOLDER = 'next_program_folder'
NOTE = '.program_workspace'  # in the run folder, beside workspace/, until the files moved in


def new_program_workspace(workspace: Path | None) -> Path:
    """A new folder for the program; its path noted beside `workspace` (the run folder's;
    None: not yet, a warm station makes the next episode's ahead and notes it when the episode
    starts, `note_program_workspace`)."""
    path = Path(tempfile.mkdtemp(prefix=PREFIX))
    if workspace is not None:
        note_program_workspace(workspace, path)
    return path


def note_program_workspace(workspace: Path, path: Path) -> None:
    """Note beside `workspace` (the run folder's) that the program works in `path`."""
    workspace.parent.mkdir(parents=True, exist_ok=True)
    (workspace.parent / NOTE).write_text(str(path) + '\n')


def is_program_folder(path: Path) -> bool:
    """Whether `path` is a program folder of the temporary directory (made by
    new_program_workspace): nothing else is ever moved or removed on a note's word."""
    return is_temporary_folder(path, PREFIX)


def is_temporary_folder(path: Path, prefix: str) -> bool:
    """Whether `path` is a folder (not a link) of the temporary directory whose name starts
    with `prefix`."""
    temporary = Path(tempfile.gettempdir()).resolve()
    return (
        path.parent.resolve() == temporary
        and path.name.startswith(prefix)
        and path.is_dir()
        and not path.is_symlink()
    )


def discard_program_folder(path: Path) -> None:
    """Remove a program folder no episode used (a warm station's next one)."""
    if is_program_folder(path):
        shutil.rmtree(path, ignore_errors=True)


def collect_program_workspace(workspace: Path) -> None:
    """Move the files of the program folder noted beside `workspace` into it, then remove that
    folder and the note. Nothing to do when there is no note; a note that names anything but a
    program folder of the temporary directory is removed and the path left alone."""
    note = workspace.parent / NOTE
    try:
        path = Path(note.read_text().strip())
    except OSError:
        return
    if is_program_folder(path):
        workspace.mkdir(parents=True, exist_ok=True)
        for entry in path.iterdir():
            shutil.move(str(entry), str(workspace / entry.name))
        shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):
        note.unlink()
