"""The motion skills on the execution engine: move_joints, move_eef, grippers, home, controller.

Each returns an `Execution` with exactly one event. A request the skill cannot carry out
(bad arguments, no IK solution, no collision-free path) ends with SKILL_ERROR before any tick.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from harness_policy.stream import Connection, PolicyRun
from harness_types.execution import Execution, skill_error
from harness_types.robot_state import ARMS

from harness_skills.execution import Engine, Options
from harness_skills.motions import (
    BothArmsMotion,
    ControllerMotion,
    GripperMotion,
    JointPathMotion,
)
from harness_skills.policy_motion import PolicyMotion

LINE_STEP_M = 0.01
DEFAULT_OPTIONS = Options()  # frozen: safe to share as a default


class Skills:
    """The motion skills; `engine.port` reaches the worker. `closed_below` is the embodiment's
    gripper threshold below which an opening counts as closed."""

    def __init__(
        self,
        engine: Engine,
        closed_below: float,
        connect: Callable[[str, float], Connection] | None = None,
    ) -> None:
        self.engine = engine
        self.connect = connect  # (endpoint, timeout_s) -> a policy connection (run_policy)
        self.port = engine.port
        self.control_hz = engine.control_hz
        self.closed_below = closed_below

    def _check_arm(self, arm: str, allow_both: bool = False) -> str:
        if arm in ARMS or (allow_both and arm == ''):
            return arm
        raise ValueError(
            f"arm must be 'left' or 'right'{' or empty for both' if allow_both else ''}"
            f', got {arm!r}'
        )

    def _path(self, arm: str, waypoints: list[np.ndarray], speed: float = 0.0) -> JointPathMotion:
        return JointPathMotion(arm, waypoints, self.port, self.control_hz, speed)

    def move_joints(
        self, arm: str, positions, speed: float = 0.0, options: Options = DEFAULT_OPTIONS, **run
    ) -> Execution:
        q = np.asarray(positions, dtype=float)
        obs = self.port.observe_state()
        if q.shape != (6,) or not np.all(np.isfinite(q)):
            return skill_error(
                'move_joints',
                arm,
                'move_joints needs 6 finite joint targets, got '
                + (f'{q.size} numbers' if q.shape != (6,) else np.array2string(q, precision=4)),
                obs.step,
                obs.time,
            )
        if arm == '':
            arm = min(ARMS, key=lambda a: float(np.abs(obs.arms[a].joints - q).max()))
        try:
            arm = self._check_arm(arm)
        except ValueError as exc:
            return skill_error('move_joints', arm, str(exc), obs.step, obs.time)
        return self.engine.run('move_joints', self._path(arm, [q], speed), options, **run)

    def _line(
        self,
        arm: str,
        start: np.ndarray,
        end: np.ndarray,
        quat: np.ndarray | None,
        seed: np.ndarray,
    ) -> tuple[list[np.ndarray], str]:
        """Joint waypoints every 1 cm along the straight TCP line from `start` to `end`."""
        n = max(1, int(np.ceil(np.linalg.norm(end - start) / LINE_STEP_M)))
        waypoints = []
        for k in range(1, n + 1):
            solved = self.port.ik(arm, start + (end - start) * (k / n), quat, seed)
            if not solved.ok:
                return [], f'the straight line leaves the reach of the {arm} arm: {solved.reason}'
            seed = solved.joints
            waypoints.append(solved.joints)
        return waypoints, ''

    def move_eef(
        self,
        arm: str,
        position,
        quat=None,
        speed: float = 0.0,
        options: Options = DEFAULT_OPTIONS,
        cartesian: bool = False,
        **run,
    ) -> Execution:
        p = np.asarray(position, dtype=float)
        obs = self.port.observe_state()
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            return skill_error(
                'move_eef',
                arm,
                'move_eef needs a position of 3 finite numbers, got '
                + (str(p.tolist()) if p.size <= 8 else f'an array of shape {p.shape}'),
                obs.step,
                obs.time,
            )
        if arm == '':
            arm = min(ARMS, key=lambda a: float(np.linalg.norm(obs.arms[a].tcp_position - p)))
        try:
            arm = self._check_arm(arm)
        except ValueError as exc:
            return skill_error('move_eef', arm, str(exc), obs.step, obs.time)
        q_quat = None if quat is None else np.asarray(quat, dtype=float)
        if cartesian:
            waypoints, reason = self._line(
                arm, obs.arms[arm].tcp_position, p, q_quat, obs.arms[arm].joints
            )
            if reason:
                return skill_error('move_eef', arm, reason, obs.step, obs.time)
            return self.engine.run('move_eef', self._path(arm, waypoints, speed), options, **run)
        solved = self.port.ik(arm, p, q_quat, obs.arms[arm].joints)
        if not solved.ok:
            return skill_error('move_eef', arm, solved.reason, obs.step, obs.time)
        path = self.port.plan(arm, solved.joints)
        if not path.ok:
            return skill_error(
                'move_eef', arm, f'no collision-free path: {path.reason}', obs.step, obs.time
            )
        motion = self._path(arm, path.waypoints[1:] or [solved.joints], speed)
        return self.engine.run('move_eef', motion, options, **run)

    def gripper(
        self, skill: str, arm: str, target: float, options: Options = DEFAULT_OPTIONS, **run
    ) -> Execution:
        obs = self.port.observe_state()
        try:
            self._check_arm(arm, allow_both=True)
        except ValueError as exc:
            return skill_error(skill, arm, str(exc), obs.step, obs.time)
        if not np.isfinite(target) or not 0.0 <= target <= 1.0:
            return skill_error(
                skill, arm, f'gripper target must be in [0, 1], got {target}', obs.step, obs.time
            )
        motion = GripperMotion([arm] if arm else list(ARMS), target, self.closed_below)
        result = self.engine.run(skill, motion, options, **run)
        result.holding, result.opening = motion.holding, motion.opening
        return result

    def home(self, arm: str = '', options: Options = DEFAULT_OPTIONS, **run) -> Execution:
        obs = self.port.observe_state()
        try:
            self._check_arm(arm, allow_both=True)
        except ValueError as exc:
            return skill_error('home', arm, str(exc), obs.step, obs.time)
        motions = []
        for a in [arm] if arm else list(ARMS):
            path = self.port.plan(a, np.zeros(6))
            if not path.ok:
                return skill_error(
                    'home', a, f'no collision-free path home: {path.reason}', obs.step, obs.time
                )
            motions.append(self._path(a, path.waypoints[1:] or [np.zeros(6)]))
        motion = motions[0] if len(motions) == 1 else BothArmsMotion(*motions)
        return self.engine.run('home', motion, options, **run)

    def run_controller(self, hz: float, options: Options, **run) -> Execution:
        obs = self.port.observe_state()
        if not options.reactive:
            return skill_error(
                'run_controller',
                '',
                "run_controller needs the program's controller (options.reactive)",
                obs.step,
                obs.time,
            )
        if not np.isfinite(hz) or hz <= 0 or hz > self.control_hz:
            return skill_error(
                'run_controller',
                '',
                f'hz must be in (0, {self.control_hz:g}], got {hz}',
                obs.step,
                obs.time,
            )
        motion = ControllerMotion(hz / self.control_hz, default_seconds=10.0)
        return self.engine.run('run_controller', motion, options, **run)

    def run_policy(self, run: PolicyRun, options: Options, **kw) -> Execution:
        obs = self.port.observe_state()
        if self.connect is None:
            detail = 'this skill server has no policy client'
            return skill_error('run_policy', 'both', detail, obs.step, obs.time)
        if not run.endpoint.startswith(('ws://', 'wss://')):
            detail = (
                f'policy {run.name!r}: the endpoint must be a ws:// address, not {run.endpoint!r}'
            )
            return skill_error('run_policy', 'both', detail, obs.step, obs.time)
        if not (run.action_hz > 0 and run.stall_seconds > 0 and run.timeout_s > 0):
            detail = 'action_hz, stall_seconds and timeout_seconds must be > 0'
            return skill_error('run_policy', 'both', detail, obs.step, obs.time)
        try:
            motion = PolicyMotion(
                run, lambda url: self.connect(url, run.timeout_s), self.port.views, self.control_hz
            )
        except ValueError as exc:
            return skill_error('run_policy', 'both', str(exc), obs.step, obs.time)
        try:
            result = self.engine.run('run_policy', motion, options, **kw)
        finally:
            motion.close()
        result.chunks, result.actions = motion.chunks, motion.actions
        return result
