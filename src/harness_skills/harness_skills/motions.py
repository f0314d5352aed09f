"""The motions of the motion skills: joint paths, grippers, and the program's controller."""

from __future__ import annotations

import math

import numpy as np
from harness_types.execution import BLOCKED, COMPLETED
from harness_types.robot_state import RobotState, arm_slice, gripper_index

from harness_skills.execution import BLOCKED_JOINT_RAD, BLOCKED_TCP_M, Ending, Motion
from harness_skills.port import StationPort

DEFAULT_SPEED = 1.0  # rad/s of the fastest joint
SETTLE_TICKS = 25  # at most 25 ticks of settling after the last waypoint
SETTLED_RAD_PER_TICK = 2e-4  # joints moving less than this per tick have settled
GRIPPER_TICKS = 12  # ticks to ramp a gripper open or closed
HOLDING_FORCE_N = 0.5  # a closed gripper whose fingers feel this much holds something


class JointPathMotion(Motion):
    """Follow joint waypoints at a speed, then settle; BLOCKED if the arm stops short."""

    def __init__(
        self,
        arm: str,
        waypoints: list[np.ndarray],
        port: StationPort,
        control_hz: float,
        speed: float = 0.0,
        gripper: float | None = None,
    ) -> None:
        self.arm = arm
        self.waypoints = [np.asarray(w, dtype=float) for w in waypoints]
        self.goal = self.waypoints[-1]
        self.port = port
        self.control_hz = control_hz
        self.step = (speed if speed > 0 else DEFAULT_SPEED) / control_hz
        self.gripper = gripper
        self._targets: list[np.ndarray] = []
        self._settled = 0
        self._last: np.ndarray | None = None

    def start(self, obs: RobotState, command: np.ndarray) -> None:
        points = [obs.arms[self.arm].joints.copy(), *self.waypoints]
        for a, b in zip(points, points[1:], strict=False):
            n = max(1, int(np.ceil(np.abs(b - a).max() / self.step)))
            self._targets += [a + (b - a) * (k / n) for k in range(1, n + 1)]
        self.total = len(self._targets)
        # Default bound: the planned duration with half again as margin, plus settling.
        self.default_seconds = 2.0 + 1.5 * self.total / self.control_hz

    def progress(self) -> float:
        return 1.0 - len(self._targets) / max(1, self.total)

    def command(self, obs: RobotState, command: np.ndarray) -> None:
        if self._targets:
            command[arm_slice(self.arm)] = self._targets.pop(0)
        else:
            command[arm_slice(self.arm)] = self.goal
        if self.gripper is not None:
            command[gripper_index(self.arm)] = self.gripper

    def finished(self, obs: RobotState) -> Ending | None:
        if self._targets:
            return None
        q = obs.arms[self.arm].joints
        moving = self._last is not None and np.abs(q - self._last).max() > SETTLED_RAD_PER_TICK
        self._last = q.copy()
        error = float(np.abs(q - self.goal).max())
        self._settled += 1
        if error <= 1e-3 or (not moving and self._settled > 2) or self._settled >= SETTLE_TICKS:
            if error <= BLOCKED_JOINT_RAD:
                tcp_error = float(
                    np.linalg.norm(
                        obs.arms[self.arm].tcp_position - self.port.tcp_of(self.arm, self.goal)
                    )
                )
                if tcp_error <= BLOCKED_TCP_M:
                    return Ending(COMPLETED, f'{self.arm} arm reached its target')
                detail = f'{self.arm} TCP settled {tcp_error * 100:.1f} cm short of its target'
            else:
                worst = int(np.argmax(np.abs(q - self.goal)))
                detail = (
                    f'{self.arm} arm settled {error:.3f} rad short of its target '
                    f'(joint{worst + 1}); something is in the way'
                )
            return Ending(BLOCKED, detail)
        return None


class BothArmsMotion(Motion):
    """Two joint paths, one per arm, in one execution: done when both are; the first arm that
    ends BLOCKED makes it BLOCKED."""

    arm = 'both'

    def __init__(self, left: JointPathMotion, right: JointPathMotion) -> None:
        self.parts = (left, right)
        self._done: dict[str, Ending] = {}

    def start(self, obs: RobotState, command: np.ndarray) -> None:
        for part in self.parts:
            part.start(obs, command)
        self.default_seconds = max(p.default_seconds for p in self.parts)

    def command(self, obs: RobotState, command: np.ndarray) -> None:
        for part in self.parts:
            part.command(obs, command)

    def finished(self, obs: RobotState) -> Ending | None:
        for part in self.parts:
            if part.arm not in self._done:
                event = part.finished(obs)
                if event is not None:
                    self._done[part.arm] = event
        blocked = [e for e in self._done.values() if e.event == BLOCKED]
        if blocked:
            return blocked[0]
        if len(self._done) == len(self.parts):
            return Ending(COMPLETED, 'both arms reached their targets')
        return None


class GripperMotion(Motion):
    """Ramp grippers to a target opening, then wait for the fingers to stop. A target below
    `closed_below` is a close: it reports whether the fingers stopped on something."""

    default_seconds = 3.0

    def __init__(self, arms: list[str], target: float, closed_below: float) -> None:
        self.gripper_arms = arms
        self.arm = arms[0] if len(arms) == 1 else 'both'
        self.target = target
        self.closed_below = closed_below
        self._k = 0
        self._start: dict[str, float] = {}
        self._last: dict[str, float] = {}
        self._still = 0
        self.holding = False
        self.opening = 0.0

    def start(self, obs: RobotState, command: np.ndarray) -> None:
        self._start = {a: float(command[gripper_index(a)]) for a in self.gripper_arms}

    def command(self, obs: RobotState, command: np.ndarray) -> None:
        self._k += 1
        alpha = min(1.0, self._k / GRIPPER_TICKS)
        for a in self.gripper_arms:
            command[gripper_index(a)] = self._start[a] + alpha * (self.target - self._start[a])

    def finished(self, obs: RobotState) -> Ending | None:
        now = {a: obs.arms[a].gripper for a in self.gripper_arms}
        still = self._last and all(abs(now[a] - self._last[a]) < 1e-3 for a in self.gripper_arms)
        self._last = now
        self._still = self._still + 1 if still else 0
        if self._k < GRIPPER_TICKS or self._still < 3:
            return None
        self.opening = min(now.values())
        if self.target < self.closed_below:
            held = [
                a
                for a in self.gripper_arms
                if now[a] > self.closed_below - 0.01 and obs.arms[a].grip_force > HOLDING_FORCE_N
            ]
            self.holding = bool(held)
            what = f'holding something ({", ".join(held)})' if held else 'holding nothing'
            return Ending(COMPLETED, f'gripper closed at {self.opening:.2f}, {what}')
        return Ending(COMPLETED, f'gripper at {self.opening:.2f} open')


class ControllerMotion(Motion):
    """Holds still and applies the program controller's targets; the controller is called on
    `calls_per_tick` of the ticks on average, exactly: on each tick where the accumulated phase
    passes a whole call (hz 10 at 25 Hz: 2 calls in every 5 ticks, 20 in 2 s; rounding the
    period to whole ticks made it 12.5 Hz). The arms it has commanded are the execution's arms
    (the region and a guard's open_gripper apply to them)."""

    arm = 'both'

    def __init__(self, calls_per_tick: float, default_seconds: float) -> None:
        if not 0.0 < calls_per_tick <= 1.0:
            raise ValueError(f'calls_per_tick must be in (0, 1], got {calls_per_tick}')
        self.calls_per_tick = calls_per_tick
        self.default_seconds = default_seconds
        self.commanded: set[str] = set()

    def command(self, obs: RobotState, command: np.ndarray) -> None:
        """Keep the last targets (the actuators hold them)."""

    def finished(self, obs: RobotState) -> Ending | None:
        return None

    def controller_due(self, tick: int) -> bool:
        # Calls made by the end of `tick` (the first tick calls): floor(tick * rate) + 1; the
        # small epsilon keeps 0.4 * 5 from landing just under 2.
        calls = math.floor(tick * self.calls_per_tick + 1e-9)
        return tick == 0 or calls > math.floor((tick - 1) * self.calls_per_tick + 1e-9)

    def arms(self) -> tuple[str, ...]:
        return tuple(a for a in ('left', 'right') if a in self.commanded)

    def apply_targets(
        self,
        targets: dict[str, np.ndarray],
        command: np.ndarray,
        port: StationPort,
        obs: RobotState,
    ) -> str:
        for key, value in targets.items():
            arm = key.split('_')[0]
            self.commanded.add(arm)
            if key in ('left', 'right'):
                command[arm_slice(key)] = value
            elif key.endswith('_gripper'):
                command[gripper_index(arm)] = float(value[0])
            else:
                quat = value[3:] if value.shape[0] == 7 else None
                solved = port.ik(arm, value[:3], quat, obs.arms[arm].joints)
                if not solved.ok:
                    return f'controller target {key}: {solved.reason}'
                command[arm_slice(arm)] = solved.joints
        return ''
