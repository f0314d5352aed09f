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
import math
import os
import stat
import tempfile
from pathlib import Path

from harness_types.config import KernelConfig, load_config
from harness_types.folder_walk import disk_bytes, open_folder, remove_tree, walk
from harness_types.whole_file import write_whole

PREFIX = 'harness-program-'
# In a warm station's folder: the program folder it started for its next episode (removed by
# whoever replaces a station that was killed).
NEXT_PROGRAM_FOLDER = 'next_program_folder'
NOTE = '.program_workspace'  # in the run folder, beside workspace/, until the files moved in


def _quota(run: Path) -> int:
    """The workspace quota in bytes of the run folder `run` (its params.yaml; the default one
    where it cannot be read)."""
    try:
        megabytes = load_config(run / 'params.yaml').kernel.program_workspace_mb
    except Exception:  # (no parameters to read: the default quota)
        megabytes = KernelConfig().program_workspace_mb
    return megabytes * 1024 * 1024


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


def collect_program_workspace(workspace: Path, copy_budget: int | None = None) -> None:
    """Move the files of the program folder noted beside `workspace` into it, then remove that
    folder and the note. Nothing to do when there is no note; a note that names anything but a
    program folder of the temporary directory is removed and the path left alone. At most
    `copy_budget` bytes move in, renamed or copied across filesystems (default: the
    workspace's quota in the run folder's params.yaml; what a program wrote past it stays out
    of the run folder). What
    is not moved (past the budget, unreadable, nested past COPY_DEPTH) is named in
    NOT_COLLECTED beside `workspace` (not in it, where the program's own entries are), and the
    rest moves on; the program folder always goes."""
    note = workspace.parent / NOTE
    try:
        path = Path(note.read_text().strip())
    except OSError:
        return
    if is_program_folder(path):
        left: list[str] = []
        try:
            workspace.mkdir(parents=True, exist_ok=True)
            budget = [copy_budget if copy_budget is not None else _quota(workspace.parent)]
            for entry in sorted(os.listdir(path)):
                try:
                    _move(path, entry, workspace, left, budget)
                except Exception as exc:  # one entry: the others still move
                    left.append(f'{entry!r}: {exc}')
        except OSError as exc:
            left.append(f'{workspace}: {exc.strerror or exc}')
        if left:
            write_whole(
                workspace.parent / NOT_COLLECTED,
                (
                    "The program's files that were not moved into workspace/, and why:\n"
                    + ''.join(f'{line}\n' for line in left)
                ).encode('utf-8', 'backslashreplace'),
            )
        remove_tree(path)
    with contextlib.suppress(OSError):
        note.unlink()


NOT_COLLECTED = 'workspace_not_collected.txt'  # in the run folder, beside workspace/
# Folders copied across filesystems to this depth (one descriptor each); a program's quota
# allows MAX_WORKSPACE_DEPTH, what lies deeper was not allowed and is named, not copied.
COPY_DEPTH = 256


def _move(source: Path, name: str, workspace: Path, left: list[str], budget: list[int]) -> None:
    """Entry `name` of the program folder renamed into `workspace` where its bytes (as the
    quota measures them) fit `budget` (bytes left, updated); else, or on another filesystem,
    copied (`_copy_across`: file by file within the budget, by descriptor, what stays out
    named). The quota is measured while cells run: a cell may overshoot it, and each cell of
    a program again, but the run folder keeps no more."""
    cost = _bytes_of(source / name)
    if cost <= budget[0]:
        try:
            os.rename(source / name, workspace / name)
            budget[0] -= cost
            return
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
    _copy_across(source, name, workspace, left, budget)


def _bytes_of(path: Path) -> float:
    """What `path` (a file, link or folder, walked by descriptor) holds on disk, as the
    workspace's quota counts it; infinite where part of it cannot be measured (a folder closed
    to this user, or nested past COPY_DEPTH): it cannot be said to fit."""
    info = os.lstat(path)
    total: float = disk_bytes(info)
    if not stat.S_ISDIR(info.st_mode):
        return total
    unmeasured: list[str] = []
    for step in walk(path, COPY_DEPTH, lambda folder, _depth, _error: unmeasured.append(folder)):
        if step.info is not None:
            total += disk_bytes(step.info)
    return math.inf if unmeasured else total


def _copy_across(
    source: Path, name: str, workspace: Path, left: list[str], budget: list[int]
) -> None:
    """Entry `name` of `source` copied into `workspace` (on another filesystem, or past what
    is left of the budget), walked by
    descriptor (harness_types.folder_walk: no path too long, no link followed): files with
    their holes kept (shutil.move writes a sparse file's holes out as zeros: a program's
    126 GB of holes would have filled the disk), links as links, modes without setuid or
    setgid; what an interrupted earlier pass left at a name is replaced, never written
    through; what is neither a file, a folder nor a link (a FIFO, a socket) is left behind.
    What cannot be copied is added to `left`; a file that would pass `budget` is not copied."""
    with _opened(source) as source_fd, _opened(workspace) as target_fd:
        first = _copy_entry(source_fd, target_fd, name, left, repr(name), budget)
        if first is None:
            return

        def unentered(folder: str, depth: int, error: OSError | None) -> None:
            where = f'{name!r}/.../{folder!r}' if depth else repr(name)
            if error is None:
                left.append(f'{where}: nested deeper than {COPY_DEPTH} folders')
            else:  # (a program's folder of mode 0o300, as the unprivileged sandbox's harness)
                left.append(f'{where}: {error.strerror or error}: its entries were not collected')

        folders = {1: first}  # depth -> the target folder of the entries one level below
        try:
            for step in walk(source / name, COPY_DEPTH, unentered):
                where = f'{name!r}/.../{step.name!r}'
                if step.info is None:
                    _close(folders.pop(step.depth + 1, None))
                    continue
                target = folders.get(step.depth)
                if target is None:
                    continue  # (its folder could not be made)
                made = _copy_entry(step.folder_fd, target, step.name, left, where, budget)
                if made is not None:
                    _close(folders.pop(step.depth + 1, None))
                    folders[step.depth + 1] = made
        finally:
            for fd in folders.values():
                _close(fd)


def _copy_entry(
    source_fd: int, target_fd: int, name: str, left: list[str], where: str, budget: list[int]
) -> int | None:
    """Entry `name` of the folder open as `source_fd` copied into the one open as
    `target_fd`; for a folder, the copy's descriptor (None otherwise, or when it failed)."""
    try:
        info = os.stat(name, dir_fd=source_fd, follow_symlinks=False)
        kind = stat.S_IFMT(info.st_mode)
        if kind not in (stat.S_IFDIR, stat.S_IFLNK, stat.S_IFREG):
            return None
        if kind == stat.S_IFREG:
            cost = disk_bytes(info)
            if cost > budget[0]:
                left.append(f'{where}: past the workspace quota (kernel.program_workspace_mb)')
                return None
            budget[0] -= cost
        _clear(target_fd, name, keep_folder=kind == stat.S_IFDIR)
        if kind == stat.S_IFDIR:
            with contextlib.suppress(FileExistsError):  # (a folder an earlier pass made)
                os.mkdir(name, 0o700, dir_fd=target_fd)
            return open_folder(name, target_fd)
        if kind == stat.S_IFLNK:
            os.symlink(os.readlink(name, dir_fd=source_fd), name, dir_fd=target_fd)
            return None
        _copy_sparse(source_fd, target_fd, name, info)
    except OSError as exc:
        left.append(f'{where}: {exc.strerror or exc}')
    return None


def _clear(folder_fd: int, name: str, keep_folder: bool) -> None:
    """Nothing at `name` in the folder open as `folder_fd` (inside the run folder: what an
    earlier pass put there), but a real folder where one is to be."""
    try:
        info = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=folder_fd)
    elif not keep_folder:
        remove_tree(f'/proc/self/fd/{folder_fd}/{name}')


def _copy_sparse(source_fd: int, target_fd: int, name: str, info: os.stat_result) -> None:
    """Copy the data of the file's extents (SEEK_DATA / SEEK_HOLE) into a new file of the same
    name and size, its holes left unwritten; all of it where the filesystem cannot say."""
    src_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=source_fd)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        dst_fd = os.open(name, flags, 0o600, dir_fd=target_fd)
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


@contextlib.contextmanager
def _opened(folder: Path):
    fd = open_folder(folder)
    try:
        yield fd
    finally:
        os.close(fd)


def _close(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
