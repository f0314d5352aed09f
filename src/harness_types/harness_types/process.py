"""What /proc says about a process."""

from __future__ import annotations

from pathlib import Path


def process_stopped(pid: int) -> bool:
    """Whether a process is stopped (SIGSTOP, or traced): it will not run until continued."""
    try:
        return Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0] in 'Tt'
    except (OSError, IndexError):
        return False
