"""A file written whole or not at all, for files that others read while they change (a run's
params.yaml and summary.json, its report)."""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path


def write_whole(path: Path, data: bytes) -> None:
    """`path` holding `data`: written beside, in a file made new under a name of its own (two
    writers never share one, and a link left at that name is not written through), then
    renamed over `path`. A reader sees the old file or the new one, never half of one; a
    process killed mid-write leaves the old one; a link at `path` is replaced, not followed.
    (Not mkstemp's file: only its owner may read one.)"""
    path = Path(path)
    part = path.with_name(f'.{path.name}.{os.getpid()}.{secrets.token_hex(4)}')
    out = open(part, 'xb')  # noqa: SIM115 (closed below, where a full disk may say so)
    try:
        with out:  # its close writes out the buffer: a full disk is raised there
            out.write(data)
        os.replace(part, path)
    except IsADirectoryError:  # (its words named the part file, not the path asked for)
        part.unlink(missing_ok=True)
        raise IsADirectoryError(errno.EISDIR, 'a folder is there, not a file', str(path)) from None
    except BaseException:
        part.unlink(missing_ok=True)
        raise
