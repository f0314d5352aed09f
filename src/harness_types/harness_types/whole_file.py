"""A file written whole or not at all, for files that others read while they change (a run's
params.yaml and summary.json, its report)."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path


def write_whole(path: Path, data: bytes) -> None:
    """`path` holding `data`: written beside, in a file made new under a name of its own (two
    writers never share one, and a link left at that name is not written through), then
    renamed over `path`. A reader sees the old file or the new one, never half of one; a
    process killed mid-write leaves the old one; a link at `path` is replaced, not followed;
    a folder, device, FIFO or socket there is an OSError, left as it is. (Not mkstemp's
    file: only its owner may read one.)"""
    path = Path(path)
    try:
        there = os.lstat(path).st_mode
    except FileNotFoundError:
        there = None
    if there is not None and stat.S_ISDIR(there):
        raise IsADirectoryError(errno.EISDIR, 'a folder is there, not a file', str(path))
    if there is not None and not (stat.S_ISREG(there) or stat.S_ISLNK(there)):
        # (a device, FIFO or socket there was replaced by a plain file: /dev/null, as root)
        raise OSError(errno.EINVAL, 'a device, FIFO or socket is there, not a file', str(path))
    part = path.with_name(f'.{path.name}.{os.getpid()}.{secrets.token_hex(4)}')
    out = open(part, 'xb')  # noqa: SIM115 (closed below, where a full disk may say so)
    try:
        with out:  # its close writes out the buffer: a full disk is raised there
            out.write(data)
        os.replace(part, path)
    except IsADirectoryError:  # (made meanwhile: its words named the part file)
        part.unlink(missing_ok=True)
        raise IsADirectoryError(errno.EISDIR, 'a folder is there, not a file', str(path)) from None
    except BaseException:
        part.unlink(missing_ok=True)
        raise


# The largest text file an input reader takes whole (a prompt, a price table, a catalogue, a
# plan): each is a few kilobytes; /dev/zero named as one filled the memory.
MAX_TEXT_BYTES = 16 * 2**20


def open_regular(path: Path, flags: int, mode: int = 0o644, follow: bool = True) -> int:
    """A descriptor of the regular file `path` opened with `flags` (made with `mode` where
    they hold O_CREAT), non-blocking (a FIFO there must not hang the open) and, unless
    `follow`, never through a link (ELOOP). OSError when it is not a regular file:
    IsADirectoryError for a folder, EINVAL for a device, FIFO or socket."""
    extra = os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags | extra, mode)
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        if stat.S_ISDIR(kind):
            raise IsADirectoryError(errno.EISDIR, 'Is a directory', str(path))
        raise OSError(errno.EINVAL, 'not a regular file (a device, FIFO or socket)', str(path))
    return fd


def read_text(path: Path, most: int = MAX_TEXT_BYTES) -> str:
    """The UTF-8 text of the regular file `path` (open_regular's). OSError (its strerror says
    why) when it is a folder, not a regular file (a FIFO blocked its reader, a device never
    ended) or larger than `most` bytes; UnicodeDecodeError when it is not UTF-8."""
    with os.fdopen(open_regular(path, os.O_RDONLY), 'rb') as file:
        data = file.read(most + 1)
    if len(data) > most:
        raise OSError(errno.EFBIG, f'larger than {most} bytes', str(path))
    return data.decode()
