"""What the `harness` command says: progress lines and one-line errors, the same from every
command's module. A line may carry what a model or a program wrote (a finish() summary, a
guard's name, an error's text): its control characters are shown as escapes, so that nothing
in it can start a line of its own (a forged `[harness] outcome: SUCCESS`) or drive the
terminal (an escape sequence)."""

from __future__ import annotations

import sys
from typing import TextIO

EXIT_USAGE = 2

# C0 controls, DEL and C1 controls; a tab stays a tab.
_ESCAPES = {
    c: {'\n': '\\n', '\r': '\\r'}.get(chr(c), f'\\x{c:02x}')
    for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))
    if chr(c) != '\t'
}


def one_line(text: str) -> str:
    """`text` with its control characters written as escapes (`\\n`, `\\x1b`)."""
    return text.translate(_ESCAPES)


def quoted(text: str) -> str:
    """What a program printed, for the terminal: each of its lines after `| ` (none can pass
    for the command's own), its other control characters written as escapes."""
    return '\n'.join(f'| {one_line(line)}' for line in text.split('\n'))


def fail(message: str) -> int:
    """One line on standard error; the usage exit status."""
    print(f'harness: {one_line(message)}', file=sys.stderr)
    return EXIT_USAGE


def say(message: str, file: TextIO | None = None) -> None:
    """A progress line on standard output (or `file`)."""
    print(f'[harness] {one_line(message)}', file=file or sys.stdout, flush=True)
