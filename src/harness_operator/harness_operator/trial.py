"""A trial: one dispatched action and what came of it, in two fields that are never merged:
`executor_status` (what the motion did, from the cell and its executions' events) and `verdict`
(what the tiered verifier measured of the action's intended effect). Pure."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from harness_types.cell import CellResult
from harness_types.execution import (
    BLOCKED,
    COMPLETED,
    EPISODE_ENDED,
    FORCE_LIMIT,
    GUARD_TRIGGERED,
    PREDICATE_SATISFIED,
    REGION_EXIT,
    SHIELD_REJECTED,
    TIMEOUT,
)

EXECUTOR_STATUSES = ('done', 'timeout', 'clamped', 'error')
# Events that stop a motion short of its goal without a fault: it was held back (by the world,
# a guard, its region, the shield, its force, or the station ending the episode at its step
# limit; an operator's station never ends it at the task's success: worker.end_on_success).
CLAMPED = (BLOCKED, GUARD_TRIGGERED, REGION_EXIT, SHIELD_REJECTED, FORCE_LIMIT, EPISODE_ENDED)


def executor_status(cell: CellResult) -> tuple[str, str]:
    """(status, detail) of a finished cell: `done` when the cell ran to its end and every
    execution ended nominally; `timeout` and
    `clamped` (CLAMPED: held back, or the episode ended at its step limit) from the event that
    stopped it; `error` for a program error, a skill error or a fault."""
    stopped = cell.stopped_by
    last = stopped or (cell.executions[-1] if cell.executions else None)
    if cell.status == 'error':
        detail = cell.traceback.strip().splitlines()[-1] if cell.traceback else cell.output
        return 'error', (detail or 'the cell failed')[-500:]
    if last is not None and last.event == TIMEOUT:
        return 'timeout', last.detail
    if last is not None and last.event in CLAMPED:
        return 'clamped', f'{last.event}: {last.detail}'
    if stopped is not None or cell.status not in ('ok', 'finished'):
        event = f'{stopped.event}: {stopped.detail}' if stopped else cell.status
        return 'error', event
    if last is not None and last.event not in (COMPLETED, PREDICATE_SATISFIED):
        return 'error', f'{last.event}: {last.detail}'
    return 'done', last.detail if last is not None else 'nothing moved'


@dataclass
class TrialRecord:
    """What `do_action` returns (and the journal keeps), by `key`."""

    trial_id: str
    key: str
    action: dict
    executor: str
    executor_status: str
    executor_detail: str
    verdict: str
    verifier_evidence: list[str]
    tier: int
    budgets_left: dict
    start_step: int = 0
    end_step: int = 0
    task: str = ''
    executions: list[dict] = field(default_factory=list)
    output: str = ''
    # How to take it back (`undo`): the inverse action's JSON, or why there is none.
    inverse: dict | None = None
    no_inverse: str = ''

    @property
    def ok(self) -> bool:
        return self.executor_status == 'done' and self.verdict == 'satisfied'

    def as_dict(self) -> dict:
        return asdict(self) | {'ok': self.ok}

    @staticmethod
    def of(d: dict) -> TrialRecord:
        known = {k: v for k, v in d.items() if k in TrialRecord.__dataclass_fields__}
        return TrialRecord(**known)
