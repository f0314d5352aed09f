"""Contact skills as short sequences of bounded executions: pick, place, release, push, press,
transfer. They run in the kernel node (trusted), so the grips they record are the kernel's.

Each step is a real skill goal (move_eef, open_gripper, close_gripper) whose Execution is
reported; a step that ends badly goes through the program's handlers like any other event.
Defaults (approach height, grasp height, lift) come from the object's measured size and can
all be overridden by arguments.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from harness_types.execution import Execution
from harness_types.robot_state import RobotState
from harness_types.scene import Grip, LocatedObject
from harness_types.transforms import (
    GRASP_PITCHES_DEG,
    matrix_to_quat,
    quat_to_matrix,
    tool_quat,
    yaw_quat,
)

# The turns about the vertical place tries on the tool it picked with, nearest first.
PLACE_YAWS_DEG = (0.0, 30.0, -30.0, 60.0, -60.0, 90.0, -90.0)


class ContactSkills:
    """pick/place/release/push/press/transfer over the kernel's skill calls (so the program's
    handlers and the log apply to every step). `closed_below` is the embodiment's gripper
    threshold below which an opening counts as closed."""

    def __init__(
        self,
        execute: Callable[[str, dict], Execution],
        reachable: Callable,
        fail: Callable[[str, str, str], Execution],
        state: Callable[[], RobotState],
        table_top: Callable[[], float],
        closed_below: float,
    ) -> None:
        self.execute = execute  # (skill, arguments) -> Execution, through the handlers
        self.reachable = reachable  # (arm, position, quat, collision_free=False) -> bool
        self.fail = fail  # (skill, arm, detail) -> raises or returns a handled record
        self.state = state  # () -> RobotState (measured)
        self.table_top = table_top  # () -> the table top's height (m), as perception measured it
        self.closed_below = closed_below
        self.grips: dict[str, Grip] = {}

    def gripper_of(self, arm: str) -> float:
        return float(self.state().arm(arm).gripper)

    def _quat_for(
        self, arm: str, points: list[np.ndarray], yaw: float = 0.0, clear_above: bool = False
    ) -> list[float] | None:
        """The steepest tool orientation that reaches every point; with `clear_above`, the
        first point (the one above, reached through free space) also without touching
        anything (the other arm holding the far end of a tray is in the way of the steepest
        pitches). The grasp itself is not asked: the scene it is checked against is now's, and
        a moving object is not yet where it will be grasped. The point that failed at one pitch
        is asked first at the next: a failing solve costs ~20 ms, a reached one ~2 ms, and the
        answer is the same in any order."""
        # (point, collision_free): the collision-free answer is the plain solve plus a
        # collision check (worker_node._ik), so the first point is not asked plainly as well
        checks = [(p, clear_above and i == 0) for i, p in enumerate(points)]
        if not checks:  # nothing to reach: the steepest
            return tool_quat(GRASP_PITCHES_DEG[0], yaw)
        first = 0  # the check that failed at the previous pitch: the likeliest to fail again
        for pitch in GRASP_PITCHES_DEG:
            quat = tool_quat(pitch, yaw)
            order = [first, *(k for k in range(len(checks)) if k != first)]
            failed = next(
                (k for k in order if not self.reachable(arm, checks[k][0], quat, checks[k][1])),
                None,
            )
            if failed is None:  # every point reached: the order of the questions does not matter
                return quat
            first = failed
        return None

    def _move(
        self,
        arm: str,
        position: np.ndarray,
        quat: list[float],
        cartesian: bool = False,
        speed: float = 0.0,
        until: list | None = None,
    ) -> Execution:
        goal = dict(
            arm=arm,
            position=[float(v) for v in position],
            quat=quat,
            speed=speed,
            max_seconds=0.0,
            region=None,
            cartesian=cartesian,
            until=until or [],
        )
        return self.execute('move_eef', goal)

    def pick(
        self,
        obj: LocatedObject,
        arm: str = '',
        approach: float | None = None,
        grasp_height: float | None = None,
        lift: float = 0.12,
        along: float = 0.0,
        toward: LocatedObject | np.ndarray | None = None,
    ) -> Grip | Execution:
        if toward is not None and not isinstance(toward, LocatedObject):
            try:
                toward = np.asarray(toward, dtype=float)
            except (TypeError, ValueError, OverflowError):
                toward = np.zeros(0)
            if toward.shape != (3,) or not np.all(np.isfinite(toward)):
                raise ValueError('pick(): toward must be an object from locate() or [x, y, z]')
        arm = arm or ('left' if obj.position[0] < 0 else 'right')
        height = float(obj.size[2])
        approach = approach if approach is not None else max(0.05, height + 0.02)
        grasp_z = (
            grasp_height
            if grasp_height is not None
            else max(self.table_top() + 0.012, obj.position[2] - min(0.008, height / 4))
        )
        # `along`: off the centre along world y (one end of a long object).
        grasp = np.array([obj.position[0], obj.position[1] + along, grasp_z])
        above = grasp + [0.0, 0.0, approach]
        lifted = grasp + [0.0, 0.0, lift]
        quat = None
        if toward is not None:  # a tool that also reaches where the object goes next
            quat = self._quat_for(
                arm, [above, grasp, lifted, *self._put_points(toward, height)], clear_above=True
            )
        quat = quat or self._quat_for(arm, [above, grasp, lifted], clear_above=True)
        if quat is None:
            return self.fail(
                'pick',
                arm,
                f'pick: the {arm} arm cannot reach {obj.id} at '
                f'{np.round(obj.position, 3).tolist()} from above',
            )
        steps = []
        if self.gripper_of(arm) < 0.9:
            steps.append(self.execute('open_gripper', dict(arm=arm, fraction=1.0)))
        steps.append(self._move(arm, above, quat))
        steps.append(self._move(arm, grasp, quat))
        closed = self.execute('close_gripper', dict(arm=arm, fraction=0.0))
        steps.append(closed)
        if not closed.holding:
            steps.append(self.execute('open_gripper', dict(arm=arm, fraction=1.0)))
            return self.fail(
                'pick',
                arm,
                f'pick: nothing was grasped: the {arm} gripper closed '
                f'on nothing at {np.round(grasp, 3).tolist()}',
            )
        steps.append(self._move(arm, lifted, quat))
        if self.gripper_of(arm) < self.closed_below:
            return self.fail(
                'pick', arm, f'pick: {obj.id} slipped out of the {arm} gripper while lifting'
            )
        grip = Grip(arm, obj.id, height, quat, obj.position - grasp, steps)
        self.grips[arm] = grip
        return grip

    @staticmethod
    def _put_points(toward: LocatedObject | np.ndarray, height: float) -> list[np.ndarray]:
        """Where the TCP goes to put an object of `height` on or into `toward` (an object or a
        point for the object's centre), and 8 cm above that."""
        if isinstance(toward, LocatedObject):
            at = np.array([toward.position[0], toward.position[1], toward.top + height / 2])
        else:
            at = np.asarray(toward, dtype=float)
        return [at + [0.0, 0.0, 0.08], at]

    def place(
        self,
        position=None,
        onto: LocatedObject | None = None,
        into: LocatedObject | None = None,
        arm: str = '',
        clearance: float = 0.005,
        approach: float = 0.08,
    ) -> list[Execution] | Execution:
        if not arm:
            if not self.grips:
                return self.fail('place', '', 'place: no arm holds anything (pick first)')
            arm = next(iter(self.grips))
        grip = self.grips.get(arm)
        if grip is None:
            return self.fail('place', arm, f'place: the {arm} arm holds nothing (pick first)')
        given = [x is not None for x in (position, onto, into)]
        if sum(given) != 1:
            return self.fail('place', arm, 'place needs exactly one of position=, onto= or into=')
        if onto is not None:
            center = np.array(
                [onto.position[0], onto.position[1], onto.top + grip.height / 2 + clearance]
            )
        elif into is not None:
            center = np.array(
                [into.position[0], into.position[1], into.top + grip.height / 2 + 0.02]
            )
        else:
            center = np.asarray(position, dtype=float)
            if center.shape != (3,) or not np.all(np.isfinite(center)):
                return self.fail('place', arm, 'place: position must be [x, y, z]')
        # The tool as it picked, turned about the vertical if need be: the held object keeps
        # the tilt it was picked with (a peg stays upright) and its offset from the grasp turns
        # with it. Another pitch only when no turn reaches.
        for yaw in PLACE_YAWS_DEG:
            turn = quat_to_matrix(yaw_quat(np.radians(yaw)))
            quat = [float(v) for v in matrix_to_quat(turn @ quat_to_matrix(grip.quat))]
            release = center - turn @ grip.offset
            above = release + [0.0, 0.0, approach]
            if self.reachable(arm, above, quat, True) and self.reachable(arm, release, quat):
                break
        else:
            release = center - grip.offset
            above = release + [0.0, 0.0, approach]
            quat = self._quat_for(arm, [above, release], clear_above=True)
        if quat is None:
            return self.fail(
                'place',
                arm,
                f'place: the {arm} arm cannot reach {np.round(release, 3).tolist()} from above',
            )
        steps = [self._move(arm, above, quat), self._move(arm, release, quat)]
        steps += self.release(arm, quat=quat)
        return steps

    def release(
        self, arm: str = '', lift: float = 0.08, quat: list[float] | None = None
    ) -> list[Execution]:
        if not arm:
            arm = next(iter(self.grips), 'left')
        steps = [self.execute('open_gripper', dict(arm=arm, fraction=1.0))]
        self.grips.pop(arm, None)
        return steps + self._retreat(arm, lift, quat)

    def push(
        self,
        obj: LocatedObject,
        direction,
        distance: float,
        arm: str = '',
        height: float | None = None,
        clearance: float = 0.03,
    ) -> list[Execution] | Execution:
        d = np.array([float(direction[0]), float(direction[1]), 0.0])
        if not np.all(np.isfinite(d)) or np.linalg.norm(d) < 1e-6:
            return self.fail('push', arm, 'push: direction must be a non-zero [dx, dy]')
        if not 0.0 < distance <= 0.3:
            return self.fail('push', arm, f'push: distance must be in (0, 0.3] m, got {distance}')
        d /= np.linalg.norm(d)
        arm = arm or ('left' if obj.position[0] < 0 else 'right')
        extent = 0.5 * (abs(d[0]) * obj.size[0] + abs(d[1]) * obj.size[1])
        z = self.table_top() + (
            height if height is not None else max(0.012, min(0.4 * float(obj.size[2]), 0.03))
        )
        start = np.array([obj.position[0], obj.position[1], z]) - d * (extent + clearance)
        end = start + d * distance
        above = start + [0.0, 0.0, 0.08]
        quat = self._quat_for(arm, [above, start, end, end + [0.0, 0.0, 0.08]])
        if quat is None:
            return self.fail(
                'push',
                arm,
                f'push: the {arm} arm cannot reach the push line from '
                f'{np.round(start, 3).tolist()} to {np.round(end, 3).tolist()}',
            )
        steps = []
        if self.gripper_of(arm) > 0.05:
            steps.append(self.execute('close_gripper', dict(arm=arm, fraction=0.0)))
        steps.append(self._move(arm, above, quat))
        steps.append(self._move(arm, start, quat, cartesian=True))
        steps.append(self._move(arm, end, quat, cartesian=True, speed=0.4))
        steps.append(self._move(arm, end + [0.0, 0.0, 0.08], quat, cartesian=True))
        return steps

    def press(
        self, target, arm: str = '', force: float = 5.0, depth: float = 0.02
    ) -> list[Execution] | Execution:
        point = (
            np.array([target.position[0], target.position[1], target.top])
            if isinstance(target, LocatedObject)
            else np.asarray(target, dtype=float)
        )
        if point.shape != (3,) or not np.all(np.isfinite(point)):
            return self.fail('press', arm, 'press needs a located object or a point [x, y, z]')
        arm = arm or ('left' if point[0] < 0 else 'right')
        above, bottom = point + [0.0, 0.0, 0.06], point - [0.0, 0.0, depth]
        quat = self._quat_for(arm, [above, bottom])
        if quat is None:
            return self.fail(
                'press',
                arm,
                f'press: the {arm} arm cannot reach {np.round(point, 3).tolist()} from above',
            )
        steps = []
        if self.gripper_of(arm) > 0.05:
            steps.append(self.execute('close_gripper', dict(arm=arm, fraction=0.0)))
        steps.append(self._move(arm, above, quat))
        # The press ends when the fingertips feel `force` (PREDICATE_SATISFIED) or reach `depth`.
        until = [(f'{arm}_grip_force', -np.inf, float(force))]
        steps.append(self._move(arm, bottom, quat, cartesian=True, speed=0.3, until=until))
        steps.append(self._move(arm, above, quat, cartesian=True))
        return steps

    def transfer(self, to_arm: str = '', along: float = 0.05, at=None) -> Grip | Execution:
        """The holder turns the object a quarter turn about the vertical so that it points at
        the other arm (each arm then works on its own side, their forearms apart), brings it to
        the hand-over point, the receiver grasps it `along` m past its centre, the holder
        opens and rises."""
        if not self.grips:
            return self.fail('transfer', to_arm, 'transfer: no arm holds anything (pick first)')
        giver = next(iter(self.grips))
        grip = self.grips[giver]
        receiver = to_arm or ('right' if giver == 'left' else 'left')
        if receiver == giver or receiver not in ('left', 'right'):
            return self.fail(
                'transfer',
                receiver,
                f'transfer: to_arm must be the other arm than the {giver} arm, got {to_arm!r}',
            )
        toward = 1.0 if giver == 'left' else -1.0  # world x direction from giver to receiver
        turn = -90.0 * toward  # the yaw that points the giver's tool (and object) at the receiver
        turn_matrix = quat_to_matrix(yaw_quat(np.radians(turn)))
        hand_quat = [float(v) for v in matrix_to_quat(turn_matrix @ quat_to_matrix(grip.quat))]
        offset = turn_matrix @ np.asarray(grip.offset, dtype=float)
        candidates = (
            [np.asarray(at, dtype=float)]
            if at is not None
            else [
                np.array([x, y, z])
                for z in (0.92, 0.97, 0.88)
                for y in (0.0, -0.05, 0.05, -0.1)
                for x in (-toward * 0.06, -toward * 0.03, -toward * 0.09)
            ]
        )
        plan = None
        for hand in candidates:
            center = hand + offset
            axis = np.array([center[0] - hand[0], center[1] - hand[1], 0.0])
            axis = (
                axis / np.linalg.norm(axis)
                if np.linalg.norm(axis) > 1e-6
                else np.array([toward, 0.0, 0.0])
            )
            take = np.array([center[0], center[1], hand[2]]) + axis * along
            if not self.reachable(giver, hand, hand_quat):
                continue
            quat_r = self._quat_for(receiver, [take + [0.0, 0.0, 0.08], take], yaw=90.0 * toward)
            if quat_r is not None:
                plan = hand, center, take, quat_r
                break
        if plan is None:
            return self.fail(
                'transfer',
                receiver,
                f'transfer: no hand-over point both arms reach (tried {len(candidates)})',
            )
        hand, center, take, quat_r = plan
        steps = [self._move(giver, hand, hand_quat)]
        # Now that the giver is there: an approach for the receiver clear of the giver's hand
        # (the arms collide), else the one found above.
        above = take + [0.0, 0.0, 0.08]
        for pitch in GRASP_PITCHES_DEG:
            quat = tool_quat(pitch, 90.0 * toward)
            if self.reachable(receiver, above, quat, True) and self.reachable(receiver, take, quat):
                quat_r = quat
                break
        if self.gripper_of(receiver) < 0.9:
            steps.append(self.execute('open_gripper', dict(arm=receiver, fraction=1.0)))
        steps.append(self._move(receiver, above, quat_r))
        steps.append(self._move(receiver, take, quat_r, cartesian=True))
        closed = self.execute('close_gripper', dict(arm=receiver, fraction=0.0))
        steps.append(closed)
        if not closed.holding:
            return self.fail(
                'transfer',
                receiver,
                f'transfer: the {receiver} gripper closed on nothing at the hand-over',
            )
        steps += self.release(giver, quat=hand_quat)
        new = Grip(receiver, grip.object_id, grip.height, quat_r, center - take, steps)
        self.grips[receiver] = new
        return new

    def _retreat(self, arm: str, lift: float, quat) -> list[Execution]:
        tcp = np.array(self.state().arm(arm).tcp_position) + [0.0, 0.0, lift]
        if quat is None or not self.reachable(arm, tcp, quat):
            quat = self._quat_for(arm, [tcp])
        if quat is None:
            return []
        return [self._move(arm, tcp, quat, cartesian=True)]
