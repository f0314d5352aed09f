"""One bounded execution and the one event that ended it (ARCHITECTURE.md section 5)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

COMPLETED = 'COMPLETED'
PREDICATE_SATISFIED = 'PREDICATE_SATISFIED'
TIMEOUT = 'TIMEOUT'
BLOCKED = 'BLOCKED'
GUARD_TRIGGERED = 'GUARD_TRIGGERED'
REGION_EXIT = 'REGION_EXIT'
SHIELD_REJECTED = 'SHIELD_REJECTED'
FORCE_LIMIT = 'FORCE_LIMIT'
REACTIVE_FAULT = 'REACTIVE_FAULT'
SKILL_ERROR = 'SKILL_ERROR'
EPISODE_ENDED = 'EPISODE_ENDED'
EVENTS = (
    COMPLETED,
    PREDICATE_SATISFIED,
    TIMEOUT,
    BLOCKED,
    GUARD_TRIGGERED,
    REGION_EXIT,
    SHIELD_REJECTED,
    FORCE_LIMIT,
    REACTIVE_FAULT,
    SKILL_ERROR,
    EPISODE_ENDED,
)
NOMINAL = (COMPLETED, PREDICATE_SATISFIED)
# The one sentence the worker ends an episode with when the task succeeded (the other is the
# step limit's): what tells an EPISODE_ENDED that is a success from one that is not.
TASK_SUCCEEDED = 'episode ended: the task succeeded'
# How the skill server words a stop from outside the program, at the start of an execution's
# detail: the emergency stop, a cancel (the client's: the cell's timeout), an execution
# refused while the emergency stop is engaged.
ESTOP_STOPPED = 'stopped by the emergency stop'
CLIENT_CANCELLED = 'cancelled by the client'
ESTOP_REFUSED = 'the emergency stop is engaged: release it to move'
CUT_FROM_OUTSIDE = (ESTOP_STOPPED, CLIENT_CANCELLED)  # (during an execution)
STOPPED_FROM_OUTSIDE = (*CUT_FROM_OUTSIDE, ESTOP_REFUSED)


def ended_in_success(event: str, detail: str) -> bool:
    """Whether an execution's event is the episode's end because its task succeeded."""
    return event == EPISODE_ENDED and detail.startswith(TASK_SUCCEEDED)


@dataclass(frozen=True)
class TraceTick:
    """One control tick of an execution: sim `time` (s), the `measured` joints after it and the
    `command` sent (14 numbers each, the command layout), the `guards` evaluated or fired."""

    time: float
    measured: np.ndarray
    command: np.ndarray
    guards: tuple[str, ...] = ()


@dataclass
class Execution:
    """One bounded execution. `event` is the name of the event that ended it, `ok` is True for
    a nominal one (COMPLETED, PREDICATE_SATISFIED), `detail` says what happened in one
    sentence, `reasons` lists every reason (e.g. each shield rejection), `trace` has one
    TraceTick per tick (.time, .measured, .command, .guards). close_gripper sets `holding` (the
    fingers stopped on something) and `opening`; run_policy sets `chunks` (the policy's
    replies) and `actions` (their rows applied); `handled` is True once a handler absorbed the
    event."""

    skill: str
    arm: str
    event: str
    detail: str = ''
    reasons: tuple[str, ...] = ()
    trace: list[TraceTick] = field(default_factory=list)
    start_step: int = 0
    end_step: int = 0
    time: float = 0.0  # sim time of the event, s
    holding: bool | None = None
    opening: float | None = None
    handled: bool = False
    chunks: int | None = None  # run_policy: the policy's chunks
    actions: int | None = None  # run_policy: their actions applied

    @property
    def ok(self) -> bool:
        return self.event in NOMINAL

    def __repr__(self) -> str:
        extra = '' if self.holding is None else f', holding={self.holding}'
        if self.chunks is not None:
            extra += f', chunks={self.chunks}, actions={self.actions}'
        return (
            f'Execution({self.skill}, arm={self.arm!r}, event={self.event}, '
            f'detail={self.detail!r}, ticks={len(self.trace)}{extra})'
        )


def skill_error(skill: str, arm: str, detail: str, step: int = 0, time: float = 0.0) -> Execution:
    """A skill that could not do what was asked, before any tick."""
    return Execution(skill, arm, SKILL_ERROR, detail, (detail,), [], step, step, time)
