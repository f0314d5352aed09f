"""The program's reactive stage: guards, the `until` predicate and the controller, per tick.

It lives where the program's code lives (the kernel, or a test node until the kernel lands)
and answers the skill server's `reactive_step` calls. Each piece of code runs under
`run_budgeted`; the first fault ends the step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from harness_types.robot_state import RobotState

from harness_reactive.budget import run_budgeted
from harness_reactive.guards import Guard, GuardSet, Watch

TARGET_LENGTHS = {
    'left': (6,),
    'right': (6,),
    'left_eef': (3, 7),
    'right_eef': (3, 7),
    'left_gripper': (1,),
    'right_gripper': (1,),
}


@dataclass(frozen=True)
class ReactiveResult:
    fault: str = ''
    guard_fired: str = ''
    guard_action: str = ''
    guard_detail: str = ''
    until_satisfied: bool = False
    targets: dict[str, np.ndarray] = field(default_factory=dict)
    evaluated: tuple[str, ...] = ()


def check_targets(raw: object) -> dict[str, np.ndarray]:
    """Validate a controller's return value; ValueError says exactly what is wrong."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ValueError(f'a controller must return a dict of targets, got {type(raw).__name__}')
    out = {}
    for key, value in raw.items():
        if key not in TARGET_LENGTHS:
            raise ValueError(f'unknown controller target {key!r}; use {", ".join(TARGET_LENGTHS)}')
        arr = np.atleast_1d(np.asarray(value, dtype=float))
        if arr.ndim != 1 or arr.shape[0] not in TARGET_LENGTHS[key]:
            want = ' or '.join(str(n) for n in TARGET_LENGTHS[key])
            raise ValueError(f'controller target {key!r} needs {want} numbers, got {arr.shape}')
        if not np.all(np.isfinite(arr)):
            raise ValueError(f'controller target {key!r} has non-finite values')
        out[key] = arr
    return out


class ProgramStage:
    """The program's guards plus, while an execution runs, its `until` and controller."""

    def __init__(self, budget_ms: float) -> None:
        self.budget_ms = budget_ms
        self.guards = GuardSet()
        self.until: Callable[[RobotState], bool] | None = None
        self.controller: Callable[[RobotState], dict | None] | None = None

    @property
    def active(self) -> bool:
        return bool(len(self.guards) or self.until or self.controller)

    def step(self, obs: RobotState, call_controller: bool = True) -> ReactiveResult:
        """Guards and watches, then `until`, then (when `call_controller`) the controller."""
        signals = obs.signals()
        evaluated = []
        for item in self.guards:
            evaluated.append(item.name)
            if isinstance(item, Watch):
                try:
                    detail = item.check(signals)
                except KeyError as exc:
                    return ReactiveResult(fault=str(exc.args[0]), evaluated=tuple(evaluated))
                if detail:
                    return ReactiveResult(
                        guard_fired=item.name,
                        guard_action=item.action,
                        guard_detail=detail,
                        evaluated=tuple(evaluated),
                    )
                continue
            assert isinstance(item, Guard)
            r = run_budgeted(f'guard {item.name!r}', item.predicate, obs, budget_ms=self.budget_ms)
            if r.fault:
                return ReactiveResult(fault=r.fault, evaluated=tuple(evaluated))
            if r.value:
                return ReactiveResult(
                    guard_fired=item.name,
                    guard_action=item.action,
                    guard_detail=f'guard {item.name!r} held',
                    evaluated=tuple(evaluated),
                )
        if self.until is not None:
            r = run_budgeted('the until predicate', self.until, obs, budget_ms=self.budget_ms)
            if r.fault:
                return ReactiveResult(fault=r.fault, evaluated=tuple(evaluated))
            if r.value:
                return ReactiveResult(until_satisfied=True, evaluated=tuple(evaluated))
        targets: dict[str, np.ndarray] = {}
        if self.controller is not None and call_controller:
            r = run_budgeted('the controller', self.controller, obs, budget_ms=self.budget_ms)
            if r.fault:
                return ReactiveResult(fault=r.fault, evaluated=tuple(evaluated))
            try:
                targets = check_targets(r.value)
            except ValueError as exc:
                return ReactiveResult(fault=str(exc), evaluated=tuple(evaluated))
        return ReactiveResult(targets=targets, evaluated=tuple(evaluated))
