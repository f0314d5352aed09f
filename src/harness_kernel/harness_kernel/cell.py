"""Run program cells in one persistent namespace: statuses, output, tracebacks, time limits.

A cell is a program's text. Variables persist from cell to cell. A cell ends as:

- `ok`            the program ran to its end
- `escalated`     a skill ended with a non-nominal event no handler absorbed
- `episode_ended` the task's step limit ended the episode
- `finished`      the program called finish(summary)
- `error`         the program raised (traceback of the program's own frames only), ran past
                  `cell_timeout_seconds`, or a handler failed

All program code runs on the thread that calls `run` (the main thread in the kernel process):
the cell timeout is a SIGALRM timer, which interrupts even `while True: pass`.
"""

from __future__ import annotations

import ast
import io
import linecache
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

OUTPUT_LIMIT = 8000


class CellTimeout(BaseException):
    """Raised into the program when its cell runs out of time (BaseException: `except
    Exception` in a program cannot swallow it)."""


class Escalation(BaseException):
    """A non-nominal event that no handler absorbed; stops the cell."""

    def __init__(self, event: Any, execution: Any = None) -> None:
        super().__init__(getattr(event, 'name', str(event)))
        self.event = event
        self.execution = execution


class EpisodeEnded(BaseException):
    """The episode's step limit was reached; stops the cell."""

    def __init__(self, event: Any = None, execution: Any = None) -> None:
        super().__init__('episode ended')
        self.event = event
        self.execution = execution


class Finished(BaseException):
    """finish(summary) was called; stops the cell."""

    def __init__(self, summary: str) -> None:
        super().__init__(summary)
        self.summary = summary


class HandlerError(BaseException):
    """A handler registered with on() raised."""


class ClippedOutput(io.TextIOBase):
    """Keeps the first OUTPUT_LIMIT characters and counts the rest (10 MB of print stays cheap)."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f'write() argument must be str, not {type(text).__name__}')
        room = self.limit - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        out = ''.join(self.parts)
        if self.dropped:
            out += f'\n[output clipped: {self.dropped} more characters not shown]'
        return out


@dataclass
class CellResult:
    status: str
    output: str
    traceback: str = ''
    event: Any = None
    execution: Any = None
    summary: str = ''
    restored: list[str] = field(default_factory=list)


class CellRunner:
    """One persistent program namespace with the API bound into it."""

    def __init__(self, api: dict[str, Any], cell_timeout_seconds: float = 120.0) -> None:
        self.api = dict(api)
        self.cell_timeout_seconds = cell_timeout_seconds
        self.namespace: dict[str, Any] = {'__name__': '__program__', '__builtins__': __builtins__}
        self.namespace.update(self.api)
        self.count = 0
        self.before_cell: Callable[[], None] | None = None

    def run(self, code: str) -> CellResult:
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError('cells must run on the main thread (the cell timeout is a signal)')
        self.count += 1
        name = f'<cell {self.count}>'
        out = ClippedOutput()
        # Tracebacks show the program's own lines.
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        try:
            compiled = compile(code, name, 'exec', flags=ast.PyCF_ONLY_AST)
            compiled = compile(compiled, name, 'exec')
        except SyntaxError as exc:
            text = ''.join(traceback.format_exception_only(type(exc), exc))
            return CellResult('error', '', traceback=text, restored=self._restore())
        old_out, old_err = sys.stdout, sys.stderr
        previous = signal.signal(signal.SIGALRM, _raise_timeout)
        signal.setitimer(signal.ITIMER_REAL, self.cell_timeout_seconds)
        sys.stdout = sys.stderr = out
        try:
            try:
                exec(compiled, self.namespace)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
                sys.stdout, sys.stderr = old_out, old_err
            result = CellResult('ok', out.text())
        except Finished as f:
            result = CellResult('finished', out.text(), summary=f.summary)
        except Escalation as e:
            result = CellResult('escalated', out.text(), event=e.event, execution=e.execution)
        except EpisodeEnded as e:
            result = CellResult('episode_ended', out.text(), event=e.event, execution=e.execution)
        except CellTimeout:
            result = CellResult(
                'error',
                out.text(),
                traceback=(
                    f'CellTimeout: the cell ran longer than cell_timeout_seconds '
                    f'({self.cell_timeout_seconds:g} s) and was stopped'
                ),
            )
        except HandlerError as exc:
            result = CellResult('error', out.text(), traceback=str(exc))
        except BaseException as exc:
            result = CellResult('error', out.text(), traceback=program_traceback(exc, name))
        result.restored = self._restore()
        if result.restored:
            note = (
                f'\n[kernel] restored API names the program rebound: {", ".join(result.restored)}'
            )
            result.output += note
        return result

    def _restore(self) -> list[str]:
        restored = []
        for key, value in self.api.items():
            if self.namespace.get(key) is not value:
                self.namespace[key] = value
                restored.append(key)
        return restored


def _raise_timeout(_signum, _frame) -> None:
    raise CellTimeout()


def program_traceback(exc: BaseException, filename: str) -> str:
    """The traceback cut to the program's own frames (cells), then the exception line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith('<cell ')]
    lines = ['Traceback (most recent call last):\n']
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    return ''.join(lines)
