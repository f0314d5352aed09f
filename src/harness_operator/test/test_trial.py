"""The executor status of a trial: what the motion did, from the cell's events."""

from harness_operator.trial import executor_status
from harness_types.cell import CellResult
from harness_types.execution import Execution


def _ended(detail: str) -> CellResult:
    e = Execution('pick', 'left', 'EPISODE_ENDED', detail)
    return CellResult('episode_ended', stopped_by=e, executions=[e])


def test_the_step_limit_still_holds_a_motion_back():
    status, detail = executor_status(
        _ended('episode ended: the step limit of 600 ticks was reached')
    )
    assert status == 'clamped' and 'step limit' in detail
