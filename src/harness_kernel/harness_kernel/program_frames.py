"""What the program process sends, made into data the kernel keeps: its account of a cell
(`program_done`), its answer to a reactive step (`reactive_result`), and a call's arguments or
result as a kernel.log record (`loggable`). Everything here came from untrusted code: types
are checked, text is clipped and made encodable, only known names pass."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from harness_reactive.guards import check_action
from harness_reactive.stage import ReactiveResult, check_targets
from harness_types.cell import STATUSES
from harness_types.execution import Execution
from harness_types.scene import LocatedObject

from harness_kernel.api_table import API_NAMES
from harness_kernel.bounds import program_text

# A built-in a cell rebound, added or removed (the program's runner puts them back as they
# were and names them).
_BUILTIN = re.compile(r'builtins\.[A-Za-z_][A-Za-z0-9_]{0,99}')


def program_done(done: dict) -> tuple[str, str, str, list[str]]:
    """The program's own account of its cell (its 'done' frame) as data: a status among the
    known ones (the kernel decides the one it reports), the traceback and summary clipped and
    encodable, and the rebound names only where they are API names or built-ins (at most 50
    of those)."""
    status = done.get('status')
    status = status if isinstance(status, str) and status in STATUSES else 'error'
    raw = done.get('restored')
    rebound = {n for n in raw if isinstance(n, str)} if isinstance(raw, list) else set()
    return (
        status,
        program_text(done.get('traceback') or ''),
        program_text(done.get('summary') or ''),
        [n for n in API_NAMES if n in rebound]
        + sorted(n for n in rebound if n == '__builtins__' or _BUILTIN.fullmatch(n))[:50],
    )


def reactive_result(raw: Any) -> ReactiveResult:
    """The program's answer to a reactive step, checked (it comes from untrusted code)."""
    if not isinstance(raw, dict):
        return ReactiveResult(fault='the program answered the reactive step with garbage')
    targets = {}
    try:
        for key, value in (raw.get('targets') or {}).items():
            targets[program_text(key, 100)] = np.asarray(value, dtype=float).reshape(-1)
        targets = check_targets(targets)
        action = str(raw.get('guard_action', ''))
        if raw.get('guard_fired'):
            check_action(action)  # the program's side checked it: a forged frame may not
    except (ValueError, TypeError, AttributeError) as exc:
        return ReactiveResult(fault=program_text(str(exc), 500))
    return ReactiveResult(
        fault=program_text(raw.get('fault', ''), 2000),
        guard_fired=program_text(raw.get('guard_fired', ''), 200),
        guard_action=action[:200],
        guard_detail=program_text(raw.get('guard_detail', ''), 2000),
        until_satisfied=bool(raw.get('until_satisfied', False)),
        targets=targets,
        evaluated=tuple(str(v)[:200] for v in (raw.get('evaluated') or ()))[:100],
    )


def loggable(value: Any) -> Any:
    """A JSON-able summary of an API call's arguments or result for kernel.log; whatever the
    program sent, it returns (a value it cannot summarise is named by its type)."""
    try:
        return _loggable(value)
    except Exception:
        return f'<{type(value).__name__}>'


def _loggable(value: Any) -> Any:
    if isinstance(value, Execution):
        return {
            'skill': value.skill,
            'arm': value.arm,
            'event': value.event,
            'detail': value.detail,
            'ticks': len(value.trace),
            'holding': value.holding,
        }
    if isinstance(value, LocatedObject):  # what perception measured, readable as data
        return {
            'located': str(value.id)[:100],
            'label': str(value.label)[:100],
            'position': [round(float(v), 4) for v in np.asarray(value.position).ravel()[:3]],
            'size': [round(float(v), 4) for v in np.asarray(value.size).ravel()[:3]],
        }
    if isinstance(value, str | int | float | bool) or value is None:
        return value if not isinstance(value, str) else value[:500]
    if isinstance(value, dict):
        return {str(k)[:100]: _loggable(v) for k, v in list(value.items())[:50]}
    if isinstance(value, list | tuple) and len(value) <= 50 and not isinstance(value, np.ndarray):
        return [_loggable(v) for v in value]
    if isinstance(value, np.ndarray) and value.size <= 16:
        return value.tolist()
    return repr(value)[:500]
