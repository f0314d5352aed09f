"""What the `harness` command says: progress lines and one-line errors, the same from every
command's module."""

from __future__ import annotations

import sys

EXIT_USAGE = 2


def fail(message: str) -> int:
    """One line on standard error; the usage exit status."""
    print(f'harness: {message}', file=sys.stderr)
    return EXIT_USAGE


def say(message: str) -> None:
    """A progress line on standard output."""
    print(f'[harness] {message}', flush=True)
