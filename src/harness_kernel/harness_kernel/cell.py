"""Run program cells in one persistent namespace (inside the program process).

A cell is a program's text. Variables persist from cell to cell. A cell ends as:

- `ok`            the program ran to its end
- `escalated`     a skill ended with a non-nominal event no handler absorbed
- `episode_ended` the task's step limit ended the episode
- `finished`      the program called finish(summary)
- `error`         the program raised (traceback of the program's own frames only), ran past
                  the cell timeout, or a handler failed

The kernel node decides the status it reports from what it saw itself; this runner says what
the program did. The cell timeout is enforced from outside: the kernel node signals the
process (SIGUSR2 -> CellTimeout here; a workspace past its quota: WorkspaceFull, a
CellTimeout) and kills it if that does not end the cell.
"""

from __future__ import annotations

import ast
import builtins
import linecache
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


class _Stop(BaseException):
    """A stop the kernel raises into the program (BaseException: `except Exception` in a
    program cannot swallow it), saying `said` when raised without words."""

    said = ''

    def __init__(self, *args: object) -> None:
        super().__init__(*(args or (self.said,)))


class CellTimeout(_Stop):
    """Raised into the program when its cell runs out of time."""

    said = 'the cell ran out of time (kernel.cell_timeout_seconds)'


class WorkspaceFull(CellTimeout):
    """Raised into the program when its workspace passes its quota: the cell stops as at its
    timeout (a CellTimeout: what catches one catches this)."""

    said = (
        'the workspace is over its quota (kernel.program_workspace_mb, program_workspace_files): '
        'the cell is stopped; delete files to write more'
    )


class ReactiveTimeout(_Stop):
    """Raised into reactive code that did not return in time."""

    said = 'it did not return in time'


class Escalation(BaseException):
    """A non-nominal event that no handler absorbed; stops the cell."""

    def __init__(self, execution: Any = None) -> None:
        super().__init__(getattr(execution, 'event', 'escalated'))
        self.execution = execution


class EpisodeEnded(BaseException):
    """The episode's step limit was reached; stops the cell."""

    def __init__(self, execution: Any = None) -> None:
        super().__init__('episode ended')
        self.execution = execution


class Finished(BaseException):
    """finish(summary) was called; stops the cell."""

    def __init__(self, summary: str) -> None:
        super().__init__(summary)
        self.summary = summary


class HandlerError(BaseException):
    """A handler registered with on() raised."""


@dataclass
class CellOutcome:
    """What the program did in one cell (the kernel node adds what it saw)."""

    status: str
    traceback: str = ''
    summary: str = ''
    restored: list[str] = field(default_factory=list)


class CellRunner:
    """One persistent program namespace with the API bound into it. `flush()` is called at
    the end of every cell, before the outcome is reported (the output pipe's buffers)."""

    def __init__(self, api: dict[str, Any], flush: Callable[[], None] = lambda: None) -> None:
        self.api = dict(api)
        self.flush = flush
        self.namespace: dict[str, Any] = {'__name__': '__program__', '__builtins__': builtins}
        self.namespace.update(self.api)
        # Python's built-ins as the cell found them: a program that rebinds one (print = None
        # in `builtins`) would break the API's own code and the next cells, the operator's too.
        self.builtins = dict(vars(builtins))
        self.count = 0
        # While the program's own code runs: a timeout signal raises only then (the runner's
        # own work after it, restoring names and flushing, is not the program's to lose).
        self.in_program = False

    def run(self, code: str) -> CellOutcome:
        self.count += 1
        name = f'<cell {self.count}>'
        # Tracebacks show the program's own lines.
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        try:
            compiled = compile(code, name, 'exec', flags=ast.PyCF_ONLY_AST)
            compiled = compile(compiled, name, 'exec')
        except (SyntaxError, ValueError) as exc:
            text = ''.join(traceback.format_exception_only(type(exc), exc))
            return CellOutcome('error', traceback=text, restored=self.restore())
        ended: BaseException | None = None
        restored: list[str] | None = None
        try:
            try:
                self.in_program = True
                exec(compiled, self.namespace)
            finally:
                self.in_program = False
                # first: what follows (the flush, the traceback) may use a built-in it broke
                restored = self.restore()
                self.flush()
        except BaseException as exc:
            ended = exc
        if restored is None:  # an interrupt landed as the program's code ended, before that
            self.in_program = False
            restored = self.restore()
            self.flush()
        result = _outcome(ended)
        result.restored = restored
        return result

    def restore(self) -> list[str]:
        """The API's names and Python's built-ins as they were bound, each one the cell
        changed named (built-ins as `builtins.NAME`); built-ins the cell added are removed."""
        restored = []
        for key, value in self.api.items():
            if self.namespace.get(key) is not value:
                self.namespace[key] = value
                restored.append(key)
        if self.namespace.get('__builtins__') is not builtins:
            self.namespace['__builtins__'] = builtins
            restored.append('__builtins__')
        now = builtins.__dict__  # (not vars(): the cell may have rebound it)
        for key in [k for k in now if k not in self.builtins]:
            del now[key]
            restored.append(f'builtins.{key}')
        for key, value in self.builtins.items():
            if now.get(key, now) is not value:
                now[key] = value
                restored.append(f'builtins.{key}')
        return restored


def _outcome(ended: BaseException | None) -> CellOutcome:
    """What a cell that ended with `ended` (None: it ran to its end) did."""
    if ended is None:
        return CellOutcome('ok')
    if isinstance(ended, Finished):
        return CellOutcome('finished', summary=str(ended.summary))
    if isinstance(ended, Escalation):
        return CellOutcome('escalated')
    if isinstance(ended, EpisodeEnded):
        return CellOutcome('episode_ended')
    if isinstance(ended, CellTimeout):  # (the kernel says why: it saw it)
        return CellOutcome('error', traceback=type(ended).__name__)
    if isinstance(ended, HandlerError):
        return CellOutcome('error', traceback=str(ended))
    return CellOutcome('error', traceback=program_traceback(ended))


def program_traceback(exc: BaseException) -> str:
    """The traceback cut to the program's own frames (cells), then the exception line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith('<cell ')]
    lines = ['Traceback (most recent call last):\n']
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    return ''.join(lines)
