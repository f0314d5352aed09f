"""Run one piece of program code under the reactive rules: a time budget and no I/O.

Reactive code runs every tick, so it must be quick and must not touch files, sockets,
processes, or sleep. A Python audit hook (installed once per process: hooks cannot be removed)
watches only the thread that is inside `run_budgeted`; it records the first forbidden event
and raises, and the record survives even if the program catches the exception. Audit hooks
are a guard against mistakes, not a sandbox: the kernel's Landlock rules are the enforcement.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Audit events that mean I/O, a process, or a sleep.
_FORBIDDEN_PREFIXES = (
    'open',
    'socket.',
    'subprocess.',
    'os.system',
    'os.exec',
    'os.fork',
    'os.posix_spawn',
    'os.spawn',
    'os.kill',
    'time.sleep',
    'urllib.',
    'http.',
    'shutil.',
    'os.remove',
    'os.rename',
    'os.mkdir',
    'os.listdir',
    'os.scandir',
)

_local = threading.local()
_hook_installed = threading.Lock()
_installed = False


class ReactiveIOError(RuntimeError):
    """Reactive code tried I/O, a process, or a sleep."""


def _audit(event: str, _args: tuple) -> None:
    if not getattr(_local, 'active', False):
        return
    if event.startswith(_FORBIDDEN_PREFIXES):
        if getattr(_local, 'violation', None) is None:
            _local.violation = event
        _local.active = False  # raising below may itself trigger audited events
        try:
            raise ReactiveIOError(
                f'{event} is not allowed in reactive code (no I/O, processes '
                'or sleeping inside guards, predicates and controllers)'
            )
        finally:
            _local.active = True


def _guarded_sleep(seconds: float) -> None:
    if getattr(_local, 'active', False):
        _audit('time.sleep', (seconds,))
    _real_sleep(seconds)


_real_sleep = time.sleep


def _install() -> None:
    global _installed
    with _hook_installed:
        if not _installed:
            sys.addaudithook(_audit)
            # Python 3.11 has no audit event for sleeping; this wrapper raises one. It behaves as
            # time.sleep outside reactive code. Code holding its own reference to the original
            # (`from time import sleep` made earlier) is caught by the time budget instead.
            time.sleep = _guarded_sleep
            _installed = True


@dataclass(frozen=True)
class BudgetedResult:
    value: Any
    fault: str  # empty when the call was fine
    elapsed_ms: float


def run_budgeted(what: str, fn: Callable[..., Any], *args: Any, budget_ms: float) -> BudgetedResult:
    """Call `fn(*args)`; a fault names `what` and says whether it raised, did I/O or ran over."""
    _install()
    _local.violation = None
    _local.active = True
    start = time.perf_counter()
    failure: BaseException | None = None
    value = None
    try:
        value = fn(*args)
    except BaseException as exc:
        failure = exc
    finally:
        _local.active = False  # before formatting: reading source lines opens files
    error = ''
    if failure is not None:
        # the program's own line (a cell's; a library's or the kernel's line told it nothing)
        frames = [
            f
            for f in traceback.extract_tb(failure.__traceback__)[1:]
            if f.filename.startswith('<cell ')
        ]
        where = f' (line {frames[-1].lineno})' if frames else ''
        error = f'{what} raised {type(failure).__name__}: {failure}{where}'
    elapsed = (time.perf_counter() - start) * 1e3
    violation = _local.violation
    if violation:
        return BudgetedResult(
            None,
            f'{what} did {violation}: reactive code may not do I/O, start processes or sleep',
            elapsed,
        )
    if error:
        return BudgetedResult(None, error, elapsed)
    if elapsed > budget_ms:
        return BudgetedResult(
            None, f'{what} took {elapsed:.1f} ms, over its {budget_ms:.0f} ms budget', elapsed
        )
    return BudgetedResult(value, '', elapsed)
