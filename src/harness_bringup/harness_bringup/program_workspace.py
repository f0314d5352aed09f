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
import errno
import os
import stat
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
        remove_tree(path)


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
            _move(entry, workspace / entry.name)
        remove_tree(path)
    with contextlib.suppress(OSError):
        note.unlink()


def _move(entry: Path, to: Path) -> None:
    """`entry` renamed to `to`, or, on another filesystem, copied (`_copy_across`)."""
    try:
        os.rename(entry, to)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        _copy_across(entry, to)


def _copy_across(entry: Path, to: Path) -> None:
    """`entry` copied to `to` on another filesystem: its files with their holes kept
    (shutil.move writes a sparse file's holes out as zeros: a program's 126 GB of holes would
    have filled the disk), links as links (never followed, in the source or at `to`: every
    open is O_NOFOLLOW, and what an earlier, interrupted pass left at a name is replaced, not
    written through), modes without setuid/setgid; what is neither a file, a folder nor a link
    (a FIFO, a socket) is left behind. A walk with a stack: a program's folders may nest as
    deep as its workspace's entries allow."""
    stack = [(entry, to)]
    while stack:
        source, target = stack.pop()
        try:
            info = os.lstat(source)
        except OSError:
            continue  # gone meanwhile
        kind = stat.S_IFMT(info.st_mode)
        if kind == stat.S_IFDIR:
            if not (target.is_dir() and not target.is_symlink()):
                _clear(target)
                os.mkdir(target, 0o700)
            with os.scandir(source) as listing:
                stack.extend((Path(e.path), target / e.name) for e in listing)
        elif kind == stat.S_IFLNK:
            _clear(target)
            os.symlink(os.readlink(source), target)
        elif kind == stat.S_IFREG:
            _clear(target)
            _copy_sparse(source, target, info)


def _clear(target: Path) -> None:
    """Nothing at `target` (inside the run folder: what an earlier pass put there)."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        remove_tree(target)


def remove_tree(root: Path) -> None:
    """`root` and everything in it removed, links not followed, as far as it can be; a walk
    with a stack (shutil.rmtree recurses, and raised RecursionError on a program's folders
    nested a thousand deep)."""
    stack, folders = [Path(root)], []
    while stack:
        folder = stack.pop()
        folders.append(folder)
        try:
            with os.scandir(folder) as listing:
                for entry in listing:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    else:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
        except OSError:
            continue
    for folder in reversed(folders):  # the deepest first
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def _copy_sparse(source: Path, to: Path, info: os.stat_result) -> None:
    """Copy the data of `source`'s extents (SEEK_DATA / SEEK_HOLE) into a new file `to`, of the
    same size, its holes left unwritten; all of it where the filesystem cannot say."""
    src_fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        dst_fd = os.open(to, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with open(src_fd, 'rb', closefd=False) as src, open(dst_fd, 'wb') as dst:
            size, offset = os.fstat(src_fd).st_size, 0
            while offset < size:
                try:
                    start = os.lseek(src_fd, offset, os.SEEK_DATA)
                    end = os.lseek(src_fd, start, os.SEEK_HOLE)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:  # no data past `offset`: a hole to the end
                        break
                    start, end = offset, size  # no SEEK_DATA here: every byte is data
                src.seek(start)
                dst.seek(start)
                left = end - start
                while left > 0:
                    chunk = src.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    dst.write(chunk)
                    left -= len(chunk)
                offset = end
            dst.truncate(size)
            dst.flush()
            os.fchmod(dst_fd, stat.S_IMODE(info.st_mode) & 0o777)
            os.utime(dst_fd, ns=(info.st_atime_ns, info.st_mtime_ns))
    finally:
        os.close(src_fd)
