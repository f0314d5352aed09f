"""run_policy's motion: a policy server's action chunks, one action per control period.

When the chunk in hand is spent, the motion sends the policy the next observation (the measured
state, the policy's cameras, the instruction) and takes the rows of its reply. Every row goes
through the execution engine, so the shield, guards, watches, the region and the time bound
apply to each. It ends COMPLETED when the policy says it is done (after the chunk in hand), or
when the arms stall: still for `stall_seconds` of simulated time once they moved (not while
running to the episode's end). A policy that cannot be reached, dies or answers out of protocol
ends it with SKILL_ERROR saying so; the arms hold the last pose.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from harness_policy.observation import observation
from harness_policy.stream import (
    ChunkStream,
    Connection,
    PolicyRun,
    hold_ticks,
    metadata_problem,
    service_failure,
)
from harness_types.camera import CameraView
from harness_types.execution import COMPLETED, SKILL_ERROR
from harness_types.robot_state import RobotState, arm_slice

from harness_skills.execution import Ending, Motion

MOVED_RAD = 0.02  # a joint this far from where the run began: the arms moved
STILL_RAD_PER_TICK = 1e-3  # every joint moving less than this per tick: the arms are still


class PolicyMotion(Motion):
    """Streams a policy's chunks (harness_policy.stream). `connect(endpoint)` opens the
    connection (its errors are RuntimeErrors whose sentence is the event's detail);
    `views(cameras, depth)` renders the policy's cameras."""

    arm = 'both'
    default_seconds = 60.0

    def __init__(
        self,
        run: PolicyRun,
        connect: Callable[[str], Connection],
        views: Callable[[tuple[str, ...], bool], list[CameraView]],
        control_hz: float,
    ) -> None:
        self.run = run
        self.connect = connect
        self.views = views
        self.control_hz = control_hz
        self.hold = hold_ticks(run.action_hz, control_hz, f'policy {run.name}')
        self.stream: ChunkStream | None = None
        self.error = ''
        self._start: np.ndarray | None = None
        self._last: np.ndarray | None = None
        self._moved = False
        self._still_ticks = 0

    @property
    def chunks(self) -> int:
        return self.stream.chunks if self.stream else 0

    @property
    def actions(self) -> int:
        return self.stream.actions if self.stream else 0

    def start(self, obs: RobotState, command: np.ndarray) -> None:
        self._start = obs.measured.copy()
        try:
            connection = self.connect(self.run.endpoint)
        except (RuntimeError, OSError) as exc:
            self.error = service_failure(str(exc))
            return
        self.stream = ChunkStream(
            connection, self.hold, self.run.name, self.run.endpoint, self.run.observation_keys
        )
        problem = metadata_problem(getattr(connection, 'metadata', None), self.run)
        self.error = service_failure(problem) if problem else ''

    def close(self) -> None:
        if self.stream is not None:
            self.stream.connection.close()

    def _observation(self, obs: RobotState) -> dict:
        views = self.views(self.run.cameras, self.run.depth) if self.run.cameras else []
        return observation(obs, views, self.run.instruction)

    def command(self, obs: RobotState, command: np.ndarray) -> None:
        if self.error:
            return  # the hold command: finished() ends the execution after this tick
        try:
            row = self.stream.next(lambda: self._observation(obs))
        except (RuntimeError, OSError, ValueError) as exc:  # ObservationError is a ValueError
            self.error = service_failure(str(exc))
            return
        if row is not None:
            command[:] = row

    def finished(self, obs: RobotState) -> Ending | None:
        if self.error:
            return Ending(SKILL_ERROR, self.error)
        if self.stream.done and not self.stream.pending():
            why = f': "{self.stream.info}"' if self.stream.info else ''
            return Ending(COMPLETED, f'policy {self.run.name} said it is done{why}')
        q = obs.measured
        joints = np.r_[q[arm_slice('left')], q[arm_slice('right')]]
        start = np.r_[self._start[arm_slice('left')], self._start[arm_slice('right')]]
        self._moved = self._moved or float(np.abs(joints - start).max()) > MOVED_RAD
        still = self._last is not None and float(np.abs(joints - self._last).max()) < (
            STILL_RAD_PER_TICK
        )
        self._last = joints
        self._still_ticks = self._still_ticks + 1 if still and self._moved else 0
        if not self.run.to_end and self._still_ticks >= self.run.stall_seconds * self.control_hz:
            return Ending(
                COMPLETED,
                f'policy {self.run.name} stalled: the arms were still for '
                f'{self.run.stall_seconds:g} s after moving',
            )
        return None
