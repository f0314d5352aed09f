"""A folder tree walked by descriptor: every folder opened relative to its parent's descriptor
with O_NOFOLLOW, so that no path grows past PATH_MAX (a walk by path stopped there, and what a
program nested deeper went unmeasured and uncollected) and no link is followed, however the
tree changes while it is walked. One descriptor is open per folder level. Used for a program's
workspace: measured by the kernel, moved and removed by the harness."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


def open_folder(name: str | os.PathLike, dir_fd: int | None = None) -> int:
    """A descriptor of the folder `name` (relative to the folder open as `dir_fd`), never
    through a link."""
    return os.open(name, _FOLDER, dir_fd=dir_fd)


@dataclass(frozen=True)
class Step:
    """An entry of the tree (`info` its lstat) in the folder open as `folder_fd`, `depth`
    levels down (the root's entries are at 1); or, with `info` None, the end of the folder
    `name` (its entries all walked), still open as `folder_fd`'s entry `name` of its parent:
    the descriptor is that parent's. Descriptors are valid until the next step."""

    folder_fd: int
    name: str
    info: os.stat_result | None
    depth: int


def walk(
    root: str | os.PathLike,
    max_depth: int,
    unentered: Callable[[str, int, OSError | None], None] | None = None,
) -> Iterator[Step]:
    """Each entry under `root`, a folder before what it holds and its end after; folders
    deeper than `max_depth` are stepped on but not entered. A folder that cannot be opened or
    listed (gone meanwhile, closed to this user) is stepped on and left; an entry that cannot
    be stat-ed (gone) is not stepped on. `unentered(name, depth, error)` is told of each
    folder not entered, after its step: one deeper than `max_depth` (error None) or one that
    cannot be opened (`root` itself at depth 0): what lies in it was not walked."""
    try:
        top = open_folder(root)
    except OSError as exc:
        if unentered is not None:
            unentered(str(root), 0, exc)
        return
    frames = [(top, _listing(top), '')]  # (folder's descriptor, its entries' names, its name)
    try:
        while frames:
            fd, names, name = frames[-1]
            if not names:
                frames.pop()
                if frames:
                    yield Step(frames[-1][0], name, None, len(frames))
                os.close(fd)
                continue
            child = names.pop()
            try:
                info = os.stat(child, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            depth = len(frames)
            yield Step(fd, child, info, depth)
            if not stat.S_ISDIR(info.st_mode):
                continue
            if depth > max_depth:
                if unentered is not None:
                    unentered(child, depth, None)
                continue
            try:
                opened = open_folder(child, fd)
            except OSError as exc:
                if unentered is not None:
                    unentered(child, depth, exc)
                continue
            frames.append((opened, _listing(opened), child))
    finally:
        for fd, _, _ in frames:
            with contextlib.suppress(OSError):
                os.close(fd)


def _listing(fd: int) -> list[str]:
    """The names in the folder open as `fd` (read whole: no second descriptor stays open)."""
    try:
        with os.scandir(fd) as entries:
            return [entry.name for entry in entries]
    except OSError:
        return []


def remove_tree(root: str | os.PathLike) -> None:
    """`root` and everything in it removed, links not followed, as far as it can be (what
    cannot be removed stays)."""
    for step in walk(root, max_depth=1 << 30):
        if step.info is None:
            with contextlib.suppress(OSError):
                os.rmdir(step.name, dir_fd=step.folder_fd)
        elif not stat.S_ISDIR(step.info.st_mode):
            with contextlib.suppress(OSError):
                os.unlink(step.name, dir_fd=step.folder_fd)
    with contextlib.suppress(OSError):
        os.rmdir(root)


def disk_bytes(info: os.stat_result) -> int:
    """An entry's bytes as a workspace's quota counts them: the larger of its size and its
    allocation (a sparse file counts at its size)."""
    return max(info.st_size, info.st_blocks * 512)
