"""What the operator's verifier sees, and when: fresh evidence of the scene (its own perception,
harness_perception.evidence) taken only once the arms are still, the last look kept while
nothing has moved since."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from harness_bench.verifier import AT_REST_RAD_S, Evidence
from harness_perception.evidence import EvidenceTaker
from harness_types.cell import CellResult

SETTLE_S = 2.0
# Hold every target until no joint moves faster than the verifier's rest threshold.
SETTLE_CELL = f"""\
run_controller(
    lambda obs: {{}},
    until=lambda obs: all(
        abs(v) < {AT_REST_RAD_S} for a in (obs.left, obs.right) for v in a.velocities
    ),
    max_seconds={SETTLE_S},
)
"""


class Sight:
    """`station` gives the robot state; `eyes` take evidence; `run_code` runs a program cell
    (the settling one)."""

    def __init__(self, station, eyes: EvidenceTaker, run_code: Callable[[str], CellResult]) -> None:
        self.station = station
        self.eyes = eyes
        self.run_code = run_code
        self.last_motion_step = 0  # the step the last cell that moved anything ended at
        self.last_observed: Evidence | None = None  # the last look (observe)

    def after(self, cell: CellResult) -> None:
        """A cell ran: if it moved anything, evidence from before it is stale."""
        if cell.executions:
            self.last_motion_step = max(self.last_motion_step, self.station.robot().step)

    def seen_since_last_motion(self, now: int) -> bool:
        """The last look is of the world as it is at step `now`."""
        return self.last_observed is not None and self.last_observed.observed_step >= now

    def look(self) -> Evidence:
        """A look now (observe), kept as the last one."""
        self.last_observed = self.eyes.take(self.last_motion_step)
        return self.last_observed

    def at_rest(self, before: Evidence | None = None) -> Evidence:
        """Fresh evidence once the arms are still (perception judges only at rest)."""
        self.settle()
        return self.eyes.take(self.last_motion_step, before)

    def settle(self) -> None:
        """If an arm still moves, hold the targets until none does (at most SETTLE_S of
        simulated time). Decided from the robot state alone, so a replay settles alike."""
        robot = self.station.robot()
        if any(float(np.abs(a.velocities).max()) >= AT_REST_RAD_S for a in robot.arms.values()):
            self.run_code(SETTLE_CELL)

    def fresh(self) -> Evidence:
        """The last look if nothing moved since, else a new one (not kept)."""
        if self.seen_since_last_motion(self.last_motion_step):
            return self.last_observed
        return self.eyes.take(self.last_motion_step)
