"""What /proc says about a process, and how an episode's processes leave."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from pathlib import Path
from typing import NoReturn


def process_stopped(pid: int) -> bool:
    """Whether a process is stopped (SIGSTOP, or traced): it will not run until continued."""
    try:
        return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] in 'Tt'
    except (OSError, IndexError):
        return False


def leave(code: int) -> NoReturn:
    """End this process now, without the interpreter's teardown (the renderer's GL context,
    the middleware, thousands of objects: ~0.3-0.5 s that the episode would wait for), as
    multiprocessing's children do. Only for a process whose files are closed and whose ROS
    nodes and context are destroyed (their goodbye sent): Python's and C's buffered output is
    flushed here, nothing else runs."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)
    os._exit(code)
