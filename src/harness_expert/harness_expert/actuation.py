"""Actuation: the expert's skill calls turned into rows of absolute joint targets.

A policy has no skill server and no simulator: this module stands in for both with the robot's
own model. `move_eef` becomes joint targets by IK (harness_worker.kinematics), a straight TCP
line (IK every centimetre) or, through free space, a transit that rises straight up to a safe
height, crosses at that height and descends straight (there is no collision model to plan
with); joints never move faster than the speed (1 rad/s), grippers ramp over 12 ticks. The rows
go out chunk by chunk through `send`, which blocks until the harness applied them and the next
observation arrived; each skill ends with an `Execution` judged from that observation
(COMPLETED, or BLOCKED when the arm settled short), so that harness_kernel.contact's
ContactSkills can run on top with this module's `execute`, `reachable` and `state`.

The last commanded row is the hold command: between skills every row repeats it, so a closed
gripper keeps being commanded closed (below its measured opening: it squeezes) and an arm that
stopped keeps its target.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from arx_x5_description.embodiment import Embodiment
from harness_policy.observation import joints_of
from harness_types.execution import BLOCKED, COMPLETED, Execution, skill_error
from harness_types.robot_state import ARMS, RobotState, arm_slice, gripper_index
from harness_types.transforms import quat_to_matrix
from harness_worker.kinematics import StationKinematics

from harness_expert.observed import robot_state, start_command

# Joints a settled arm may be from its target before the move counts as stopped short: the
# skill server's BLOCKED threshold (harness_skills.execution.BLOCKED_JOINT_RAD).
BLOCKED_RAD = 0.05
SETTLED_RAD = 0.01  # joints this close to the target: no more settling needed
MAX_WAYPOINT_JUMP_RAD = 0.35  # a joint jumping more between 1 cm waypoints: IK changed branch


@dataclass(frozen=True)
class Pacing:
    """How fast and how carefully the expert moves (what the skill server's skills do, plus
    the transit height a policy without a collision model keeps)."""

    speed_rad_s: float = 1.0  # fastest joint, every motion
    line_speed_m_s: float = 0.25  # TCP along a straight line (a slower `speed` scales it)
    line_step_m: float = 0.01  # IK every this along a straight line
    line_turn_rad: float = 0.05  # ... and every this much change of orientation
    gripper_ticks: int = 12  # ramp of a gripper command
    safe_height_m: float = 0.13  # TCP above the table top while crossing (objects below)
    direct_m: float = 0.03  # closer than this (horizontally): a straight line, no transit
    settle_chunks: int = 3  # at most this many chunks of holding still after a motion


class MotionError(RuntimeError):
    """A motion the robot cannot make (no IK along the way); the message says which."""


def slerp(r0: np.ndarray, r1: np.ndarray, t: float) -> np.ndarray:
    """The rotation a fraction `t` of the way from r0 to r1 (about one fixed axis)."""
    return r0 @ pin.exp3(t * pin.log3(r0.T @ r1))


class Actuation:
    """Skill calls -> rows of 14 joint targets, sent `chunk` rows at a time.

    `send(rows)` hands a chunk to the harness and returns the observation that follows it
    (it raises to abort the script). `obs` is the observation the script starts from."""

    def __init__(
        self,
        emb: Embodiment,
        kinematics: StationKinematics,
        send: Callable[[np.ndarray], dict],
        obs: dict,
        chunk: int = 10,
        pacing: Pacing | None = None,
    ) -> None:
        self.emb = emb
        self.kinematics = kinematics
        self.send = send
        self.obs = obs
        self.chunk = chunk
        self.pacing = pacing or Pacing()
        self.hz = emb.rates.control_hz
        self.table_z = emb.table_top_z
        self.closed_below = emb.gripper.closed_below
        # The hold command starts as the measured start pose.
        self.command = start_command(obs)
        self._pending: list[np.ndarray] = []
        self.ticks = 0  # rows sent so far

    # What ContactSkills is given ----------------------------------------------------------

    def state(self) -> RobotState:
        """The measured robot, as of the last observation."""
        return robot_state(self.obs, self.kinematics, self.emb)

    def reachable(self, arm: str, position, quat, collision_free: bool = False) -> bool:
        """Whether IK reaches the pose (seeded at the arm's commanded joints). A policy has
        no collision model: `collision_free` is not checked."""
        solved = self.kinematics.arms[arm].ik(
            np.asarray(position, dtype=float),
            quat_to_matrix(quat),
            self.command[arm_slice(arm)],
        )
        return bool(solved.ok)

    def execute(self, skill: str, args: dict) -> Execution:
        """One skill call of ContactSkills: move_eef, open_gripper or close_gripper. A move's
        `until` (a force predicate) is ignored: a policy is sent no forces."""
        arm = str(args.get('arm', ''))
        if arm not in ARMS:
            return self._error(skill, arm, f'{skill}: arm must be left or right, got {arm!r}')
        if skill == 'move_eef':
            quat = args.get('quat')
            return self.move_eef(
                arm,
                np.asarray(args['position'], dtype=float),
                None if quat is None else quat_to_matrix(quat),
                cartesian=bool(args.get('cartesian', False)),
                speed=float(args.get('speed', 0.0) or 0.0),
            )
        if skill in ('open_gripper', 'close_gripper'):
            fallback = 1.0 if skill == 'open_gripper' else 0.0
            return self.gripper(skill, arm, float(args.get('fraction', fallback)))
        return self._error(skill, arm, f'the expert has no skill {skill!r}')

    # Skills -------------------------------------------------------------------------------

    def move_eef(
        self,
        arm: str,
        position: np.ndarray,
        rotation: np.ndarray | None = None,
        cartesian: bool = False,
        speed: float = 0.0,
    ) -> Execution:
        """The TCP to `position` (and `rotation`; default: as commanded now): a straight line
        when `cartesian` or when the target is right above or below, else a transit."""
        start = self.command[arm_slice(arm)].copy()
        rotation = rotation if rotation is not None else self._tcp(arm, start)[1]
        try:
            if cartesian:
                path = self._line(arm, start, position, rotation)
            else:
                path = self._transit(arm, start, position, rotation)
        except MotionError as exc:
            return self._error('move_eef', arm, str(exc))
        scale = speed / self.pacing.speed_rad_s if speed > 0 else 1.0
        self._follow(arm, path, scale)
        return self._settle('move_eef', arm, path[-1][0])

    def move_joints(self, targets: dict[str, np.ndarray]) -> Execution:
        """Each named arm along a straight joint path to its targets, all arms together."""
        starts = {arm: self.command[arm_slice(arm)].copy() for arm in targets}
        far = max(float(np.abs(targets[a] - starts[a]).max()) for a in targets)
        ticks = max(1, int(np.ceil(far / (self.pacing.speed_rad_s / self.hz))))
        for k in range(1, ticks + 1):
            for arm, goal in targets.items():
                self.command[arm_slice(arm)] = starts[arm] + (goal - starts[arm]) * (k / ticks)
            self._emit()
        arms = list(targets)
        return self._settle(
            'move_joints', arms[0] if len(arms) == 1 else 'both', None, dict(targets)
        )

    def home(self) -> Execution:
        """Both arms back to their start pose (joints 0): an arm below the safe height rises
        straight up first, so that it leaves what it let go of from above."""
        safe = self.table_z + self.pacing.safe_height_m
        for arm in ARMS:
            q = self.command[arm_slice(arm)]
            if np.abs(q).max() < 1e-3:
                continue
            p, r = self._tcp(arm, q)
            if p[2] < safe - 0.005:
                # Without a line up, the joint path home still rises from most poses.
                with contextlib.suppress(MotionError):
                    self._follow(arm, self._line(arm, q, np.array([p[0], p[1], safe]), r))
        return self.move_joints({arm: np.zeros(6) for arm in ARMS})

    def gripper(self, skill: str, arm: str, target: float) -> Execution:
        """Ramp the gripper command to `target`, then wait for the fingers to stop. A close
        (target below closed_below) holds something when the fingers stopped open."""
        target = float(np.clip(target, 0.0, 1.0))
        i = gripper_index(arm)
        start = float(self.command[i])
        ticks = self.pacing.gripper_ticks
        for k in range(1, ticks + 1):
            self.command[i] = start + (target - start) * (k / ticks)
            self._emit()
        self.sync()
        opening = float(joints_of(self.obs)[i])
        for _ in range(self.pacing.settle_chunks):
            self.hold(self.chunk)
            now = float(joints_of(self.obs)[i])
            if abs(now - opening) < 2e-3:
                break
            opening = now
        e = self._execution(skill, arm, COMPLETED, f'{arm} gripper at {opening:.2f} open')
        e.opening = opening
        if target < self.closed_below:
            # No force reaches a policy: fingers that stopped well short of closed hold
            # something (closed on nothing they measure ~0.19).
            e.holding = opening > self.closed_below + 0.05
            e.detail = f'gripper closed at {opening:.2f}, holding ' + (
                'something' if e.holding else 'nothing'
            )
        return e

    def hold(self, ticks: int) -> None:
        """Hold the command for `ticks` rows (rounded up to whole chunks), then observe."""
        for _ in range(max(1, ticks)):
            self._emit()
        self.sync()

    # Rows and chunks ----------------------------------------------------------------------

    def _emit(self) -> None:
        self._pending.append(self.command.copy())
        if len(self._pending) >= self.chunk:
            rows, self._pending = self._pending[: self.chunk], self._pending[self.chunk :]
            self._send(rows)

    def sync(self) -> None:
        """Send what is pending, padded with the hold command to a whole chunk; returns once
        the observation after it arrived (no-op when nothing is pending)."""
        if self._pending:
            rows = self._pending + [self.command.copy()] * (self.chunk - len(self._pending))
            self._pending = []
            self._send(rows)

    def _send(self, rows: list[np.ndarray]) -> None:
        self.obs = self.send(np.array(rows))
        self.ticks += len(rows)

    # Paths --------------------------------------------------------------------------------

    def _tcp(self, arm: str, joints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pose = self.kinematics.arms[arm].fk(joints)
        return pose.position, pose.rotation

    def _line(
        self, arm: str, start: np.ndarray, end: np.ndarray, rotation: np.ndarray
    ) -> list[tuple[np.ndarray, float]]:
        """Joint waypoints along the straight TCP line from the pose at `start` to `end`
        (orientation turning evenly to `rotation`), each with the line length before it."""
        p0, r0 = self._tcp(arm, start)
        end = np.asarray(end, dtype=float)
        length = float(np.linalg.norm(end - p0))
        turn = float(np.linalg.norm(pin.log3(r0.T @ rotation)))
        n = max(
            1,
            int(np.ceil(length / self.pacing.line_step_m)),
            int(np.ceil(turn / self.pacing.line_turn_rad)),
        )
        kin = self.kinematics.arms[arm]
        seed, path = start, []
        for k in range(1, n + 1):
            t = k / n
            solved = kin.ik(p0 + (end - p0) * t, slerp(r0, rotation, t), seed)
            if not solved.ok:
                raise MotionError(
                    f'the straight line to {np.round(end, 3).tolist()} leaves the reach of '
                    f'the {arm} arm: {solved.reason}'
                )
            if np.abs(solved.joints - seed).max() > MAX_WAYPOINT_JUMP_RAD:
                raise MotionError(
                    f'the straight line to {np.round(end, 3).tolist()} passes a singularity '
                    f'of the {arm} arm'
                )
            path.append((solved.joints, length / n))
            seed = solved.joints
        return path

    def _transit(
        self, arm: str, start: np.ndarray, end: np.ndarray, rotation: np.ndarray
    ) -> list[tuple[np.ndarray, float]]:
        """Through free space without a collision model: straight up to the safe height,
        across at that height, straight down; a straight line when the target is near.
        Where the arm cannot hold the tool's pitch up there (near its base, the tool straight
        down reaches only so high), it crosses with the tool tilted up and turns it back on
        the way down."""
        p0, r0 = self._tcp(arm, start)
        end = np.asarray(end, dtype=float)
        if float(np.linalg.norm(end[:2] - p0[:2])) < self.pacing.direct_m:
            return self._line(arm, start, end, rotation)
        safe = self.table_z + self.pacing.safe_height_m
        path: list[tuple[np.ndarray, float]] = []
        q = start
        if p0[2] < safe - 0.005:
            up = np.array([p0[0], p0[1], safe])
            tilted = self._tilted(arm, up, r0, q)
            path += self._free(arm, q, up, r0 if tilted is None else tilted)
            q = path[-1][0]
        over = np.array([end[0], end[1], max(safe, end[2])])
        tilted = self._tilted(arm, over, rotation, q)
        direct = tilted is None  # nothing reaches up there: across and down at once
        if direct:
            over, tilted = end, rotation
        path += self._free(arm, q, over, tilted)
        if not direct:
            # Straight down from above the end, turning from the tilt to `rotation` (also when
            # the end is at the safe height or above: then only the turn remains).
            path += self._line(arm, path[-1][0], end, rotation)
        return path

    def _free(
        self, arm: str, start: np.ndarray, end: np.ndarray, rotation: np.ndarray
    ) -> list[tuple[np.ndarray, float]]:
        """A segment through free space: the straight line, or where the line leaves the arm's
        reach or passes a singularity on the way, a joint path to the end's IK solution."""
        try:
            return self._line(arm, start, end, rotation)
        except MotionError:
            solved = self.kinematics.arms[arm].ik(end, rotation, start)
            if not solved.ok:
                raise MotionError(
                    f'the {arm} arm cannot reach {np.round(end, 3).tolist()}: {solved.reason}'
                ) from None
            return [(solved.joints, 0.0)]

    def _tilted(
        self, arm: str, point: np.ndarray, rotation: np.ndarray, seed: np.ndarray
    ) -> np.ndarray | None:
        """`rotation`, or the least tilt of it about the jaw axis (a smaller pitch) that the
        arm reaches at `point`; None when no tilt up to 45 degrees does."""
        kin = self.kinematics.arms[arm]
        jaw = rotation[:, 1]
        for degrees in range(0, 50, 5):
            candidates = [
                pin.exp3(jaw * sign * np.radians(degrees)) @ rotation for sign in (1.0, -1.0)
            ]
            # The tilt that turns the pointing direction (x) toward the tool's z: for the tools
            # of harness_types.transforms.tool_rotation that is a smaller pitch.
            r = max(candidates, key=lambda c: float(c[:, 0] @ rotation[:, 2]))
            if kin.ik(point, r, seed).ok:
                return r
        return None

    def _follow(self, arm: str, path: list[tuple[np.ndarray, float]], scale: float = 1.0) -> None:
        """Rows along the waypoints: no joint faster than the speed, the TCP no faster than
        the line speed (both times `scale`)."""
        joint_step = self.pacing.speed_rad_s * scale / self.hz
        line_step = self.pacing.line_speed_m_s * scale / self.hz
        q = self.command[arm_slice(arm)].copy()
        for goal, length in path:
            ticks = max(
                1,
                int(np.ceil(float(np.abs(goal - q).max()) / joint_step)),
                int(np.ceil(length / line_step)),
            )
            for k in range(1, ticks + 1):
                self.command[arm_slice(arm)] = q + (goal - q) * (k / ticks)
                self._emit()
            q = goal

    def _settle(
        self,
        skill: str,
        arm: str,
        goal: np.ndarray | None,
        goals: dict[str, np.ndarray] | None = None,
    ) -> Execution:
        """Hold until the arms reached their goals (a few chunks at most); BLOCKED when an arm
        settled short."""
        goals = goals if goals is not None else {arm: goal}
        self.sync()

        def error() -> tuple[float, str]:
            measured = joints_of(self.obs)
            worst = [(float(np.abs(measured[arm_slice(a)] - g).max()), a) for a, g in goals.items()]
            return max(worst)

        last = joints_of(self.obs)
        for _ in range(self.pacing.settle_chunks):
            if error()[0] <= SETTLED_RAD:
                break
            self.hold(self.chunk)
            now = joints_of(self.obs)
            if float(np.abs(now - last).max()) < 2e-3:
                break  # still: it will get no closer
            last = now
        off, which = error()
        if off > BLOCKED_RAD:
            return self._execution(
                skill, arm, BLOCKED, f'{which} arm settled {off:.3f} rad short of its target'
            )
        return self._execution(skill, arm, COMPLETED, f'{arm} arm reached its target')

    def _execution(self, skill: str, arm: str, event: str, detail: str) -> Execution:
        t = float(np.asarray(self.obs.get('observation/time', 0.0)))
        return Execution(skill, arm, event, detail, (detail,), [], self.ticks, self.ticks, t)

    def _error(self, skill: str, arm: str, detail: str) -> Execution:
        t = float(np.asarray(self.obs.get('observation/time', 0.0)))
        return skill_error(skill, arm, detail, self.ticks, t)
