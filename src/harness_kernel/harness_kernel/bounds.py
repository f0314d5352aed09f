"""What a program may make the trusted side hold or send: the bounds the kernel enforces per
cell and per episode, and the measures it takes of the program's workspace and of the text
it reports. A bound that is reached is a clear error to the program (or the cell's end, for
the workspace), never a failure of the kernel node."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass

from harness_types.config import KernelConfig
from harness_types.folder_walk import disk_bytes, walk

OUTPUT_LIMIT = 8000  # characters of a cell's program output, traceback or summary
LOG_RECORD_CHARS = 2000  # one kernel.log record (a call's arguments and result), at most
DELETED = b' (deleted)'  # how /proc/PID/maps ends the path of a file that has no name any more


@dataclass(frozen=True)
class ProgramBounds:
    """Per-cell and per-episode bounds: the kernel.* parameters of config/harness.yaml (their
    defaults and meaning: harness_types.config.KernelConfig)."""

    workspace_mb: int
    workspace_files: int
    shown_images_per_cell: int
    shown_images_per_episode: int
    shown_image_pixels: int
    log_records_per_cell: int

    @classmethod
    def of(cls, config: KernelConfig) -> ProgramBounds:
        return cls(
            config.program_workspace_mb,
            config.program_workspace_files,
            config.shown_images_per_cell,
            config.shown_images_per_episode,
            config.shown_image_pixels,
            config.log_records_per_cell,
        )


# Folders a workspace may nest: deeper ones are not walked (a program has no use for them,
# and a walk by path had stopped at PATH_MAX, leaving what lay deeper unmeasured).
MAX_WORKSPACE_DEPTH = 64


@dataclass(frozen=True)
class WorkspaceUse:
    """What the workspace holds: bytes (the larger of size and allocation) and entries,
    counted until `files` passes its bound, and the depth of its deepest folder (walked to
    MAX_WORKSPACE_DEPTH, one past it seen)."""

    bytes: int
    entries: int
    depth: int = 0

    def over(self, bounds: ProgramBounds, since: WorkspaceUse | None = None) -> str:
        """Why this is over `bounds` ('' when it is not); with `since`, only bytes or files
        that grew since then count (a cell that deletes from an overfull workspace goes on).
        Folders nested past the bound are over it whatever `since`."""
        since = since or WorkspaceUse(-1, -1, -1)
        # (whatever the cell did: what lies deeper is not measured, and could grow unseen)
        if self.depth > MAX_WORKSPACE_DEPTH:
            return (
                f'the workspace nests folders more than {MAX_WORKSPACE_DEPTH} deep (what lies '
                'deeper is not measured): remove them'
            )
        if self.entries > bounds.workspace_files and self.entries > since.entries:
            return (
                f'the workspace holds more than {bounds.workspace_files} files and folders '
                '(kernel.program_workspace_files)'
            )
        if self.bytes > bounds.workspace_mb * 1024 * 1024 and self.bytes > since.bytes:
            return (
                f'the workspace holds {self.bytes / 1048576:.0f} MB, over its '
                f'{bounds.workspace_mb} MB quota (kernel.program_workspace_mb)'
            )
        return ''


def workspace_use(root: str, max_entries: int, pid: int = -1) -> WorkspaceUse:
    """The workspace's bytes and entries, links not followed; the walk stops once it has seen
    more than `max_entries` entries (that alone is over the bound). With the program's `pid`,
    the files it holds that have no name any more (deleted, or made with O_TMPFILE) count too:
    they fill the disk as much as named ones. It holds them open, or mapped (a mapping keeps a
    file after its descriptor is closed)."""
    total, entries, depth = _unnamed_bytes(pid, root), 0, 0
    for step in walk(root, MAX_WORKSPACE_DEPTH):  # (by descriptor: no path is too long)
        if step.info is None:
            continue
        entries += 1
        total += disk_bytes(step.info)
        if stat.S_ISDIR(step.info.st_mode):
            depth = max(depth, step.depth)
        if entries > max_entries:
            break
    return WorkspaceUse(total, entries, depth)


def _unnamed_bytes(pid: int, root: str) -> int:
    """The bytes of the files without a name that process `pid` holds open (any) or mapped
    (those that were made in the workspace `root`: a deleted library or a shared anonymous
    mapping is not the program's disk use); each file once."""
    if pid <= 0:
        return 0
    try:
        held = [f'/proc/{pid}/fd/{fd}' for fd in os.listdir(f'/proc/{pid}/fd')]
    except OSError:
        return 0  # gone, or not ours to read
    mapped = _mapped_unnamed(pid, root)
    total, seen = 0, set()
    for path in held + [f'/proc/{pid}/map_files/{span}' for span in mapped]:
        try:
            info = os.stat(path)
        except OSError:
            continue  # closed meanwhile; map_files needs privileges a kernel may not have
        key = (info.st_dev, info.st_ino)
        if stat.S_ISREG(info.st_mode) and info.st_nlink == 0 and key not in seen:
            seen.add(key)
            total += disk_bytes(info)
    # A mapped file not stat-ed above counts the most of it a mapping reaches (its offset and
    # length): a bound on what the program can write through it, read from maps alone.
    reach: dict[tuple[int, int], int] = {}
    for key, extent in mapped.values():
        if key not in seen:
            reach[key] = max(reach.get(key, 0), extent)
    return total + sum(reach.values())


def _mapped_unnamed(pid: int, root: str) -> dict[str, tuple[tuple[int, int], int]]:
    """The mappings of files made in `root` that have no name any more, from /proc/PID/maps:
    address span -> ((device, inode), offset + length). Read as bytes: a file name is any
    bytes, and maps escapes only the newline."""
    inside = os.fsencode(os.path.realpath(root)) + b'/'
    found = {}
    try:
        with open(f'/proc/{pid}/maps', 'rb') as maps:
            lines = maps.read().splitlines()
    except OSError:
        return found
    for line in lines:  # address perms offset major:minor inode path
        fields = line.split(maxsplit=5)
        if len(fields) < 6 or not fields[5].startswith(inside):
            continue
        if not fields[5].endswith(DELETED):
            continue
        try:
            start, end = (int(v, 16) for v in fields[0].split(b'-'))
            major, minor = (int(v, 16) for v in fields[3].split(b':'))
            key = (os.makedev(major, minor), int(fields[4]))
            found[fields[0].decode()] = (key, int(fields[2], 16) + end - start)
        except ValueError:
            continue
    return found


def program_text(value: object, limit: int = OUTPUT_LIMIT) -> str:
    """Text that came from the program, made safe to show: a string (anything else is written
    as one), clipped to `limit` characters with the clip said, and encodable (a lone
    surrogate is replaced)."""
    text = value if isinstance(value, str) else repr(value)
    clipped = len(text) > limit
    text = text[:limit].encode('utf-8', 'replace').decode('utf-8')
    return text + f'\n[clipped at {limit} characters]' if clipped else text


def bounded_record(record: dict) -> dict:
    """A kernel.log record of at most about LOG_RECORD_CHARS characters: over that, the record
    becomes its call's name and the first characters of its line (any field may hold what the
    program sent: arguments, a refused name, an error's words)."""
    line = json.dumps(record, default=str)
    if len(line) <= LOG_RECORD_CHARS:
        return record
    return {
        'call': str(record.get('call', record.get('execution', '?')))[:64],
        'clipped': f'a record of {len(line)} characters; its first {LOG_RECORD_CHARS}:',
        'line': line[:LOG_RECORD_CHARS],
    }


class ClippedOutput:
    """Keeps the first OUTPUT_LIMIT characters and counts the rest (10 MB of print stays cheap)."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def write(self, text: str) -> None:
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))

    def text(self) -> str:
        out = ''.join(self.parts)
        if self.dropped:
            out += f'\n[output clipped: {self.dropped} more characters not shown]'
        return out
