"""Contact skills as short sequences of bounded executions: pick, place, release.

Each step is a real skill goal (move_eef, open_gripper, close_gripper) whose Execution is
reported; a step that ends badly goes through the program's handlers like any other event.
Defaults (approach height, grasp height, lift) come from the object's measured size and can
all be overridden by arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from harness_skills.perception import LocatedObject

from harness_kernel.records import Execution

CLOSED_BELOW = 0.2
PITCHES_DEG = tuple(range(90, 25, -5))  # steepest first: straight down is the best grasp


def tool_quat(pitch_deg: float) -> list[float]:
    """TCP orientation (w, x, y, z): tool pointing along world +y, pitched down by `pitch_deg`
    (90 = straight down), jaws opening along world x."""
    p = np.radians(pitch_deg)
    x = np.array([0.0, np.cos(p), -np.sin(p)])
    y = np.array([-1.0, 0.0, 0.0])
    r = np.column_stack([x, y, np.cross(x, y)])
    w = np.sqrt(max(1e-12, 1.0 + np.trace(r))) / 2.0
    return [
        float(w),
        float((r[2, 1] - r[1, 2]) / (4 * w)),
        float((r[0, 2] - r[2, 0]) / (4 * w)),
        float((r[1, 0] - r[0, 1]) / (4 * w)),
    ]


@dataclass
class Grip:
    """What pick returns: which arm holds which object, and the executions it took."""

    arm: str
    object_id: str
    height: float  # the held object's height (m)
    offset: np.ndarray  # object centre minus TCP at the grasp (world, m)
    executions: list[Execution] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f'Grip(arm={self.arm!r}, object={self.object_id!r}, steps={len(self.executions)})'


class ContactSkills:
    """pick/place/release over the API's own calls (so handlers and logging apply)."""

    def __init__(
        self,
        execute: Callable[[str, dict], Execution],
        reachable: Callable,
        fail: Callable[[str, str, str], Execution],
        state: Callable[[], object],
        table_top_z: float,
    ) -> None:
        self.execute = execute
        self.reachable = reachable  # (arm, position, quat) -> bool
        self.fail = fail  # (skill, arm, detail) -> raises or returns a handled record
        self.state = state  # () -> StateView (measured)
        self.table_top_z = table_top_z
        self.grips: dict[str, Grip] = {}

    def gripper_of(self, arm: str) -> float:
        return float(getattr(self.state(), arm).gripper)

    def _quat_for(self, arm: str, points: list[np.ndarray]) -> list[float] | None:
        for pitch in PITCHES_DEG:
            quat = tool_quat(pitch)
            if all(self.reachable(arm, p, quat) for p in points):
                return quat
        return None

    def _move(self, arm: str, position: np.ndarray, quat: list[float]) -> Execution:
        return self.execute(
            'move_eef',
            dict(
                arm=arm,
                position=[float(v) for v in position],
                quat=quat,
                speed=0.0,
                max_seconds=0.0,
                region=None,
            ),
        )

    def pick(
        self,
        obj: LocatedObject,
        arm: str = '',
        approach: float | None = None,
        grasp_height: float | None = None,
        lift: float = 0.12,
    ) -> Grip | Execution:
        arm = arm or ('left' if obj.position[0] < 0 else 'right')
        height = float(obj.size[2])
        approach = approach if approach is not None else max(0.05, height + 0.02)
        grasp_z = (
            grasp_height
            if grasp_height is not None
            else max(self.table_top_z + 0.012, obj.position[2] - min(0.008, height / 4))
        )
        grasp = np.array([obj.position[0], obj.position[1], grasp_z])
        above = grasp + [0.0, 0.0, approach]
        lifted = grasp + [0.0, 0.0, lift]
        quat = self._quat_for(arm, [above, grasp, lifted])
        if quat is None:
            return self.fail(
                'pick',
                arm,
                f'pick: the {arm} arm cannot reach {obj.id} at '
                f'{np.round(obj.position, 3).tolist()} from above',
            )
        steps = []
        if self.gripper_of(arm) < 0.9:
            steps.append(self.execute('open_gripper', dict(arm=arm, target=1.0)))
        steps.append(self._move(arm, above, quat))
        steps.append(self._move(arm, grasp, quat))
        closed = self.execute('close_gripper', dict(arm=arm, target=0.0))
        steps.append(closed)
        if not closed.holding:
            steps.append(self.execute('open_gripper', dict(arm=arm, target=1.0)))
            return self.fail(
                'pick',
                arm,
                f'pick: nothing was grasped: the {arm} gripper closed '
                f'on nothing at {np.round(grasp, 3).tolist()}',
            )
        steps.append(self._move(arm, lifted, quat))
        if self.gripper_of(arm) < CLOSED_BELOW:
            return self.fail(
                'pick', arm, f'pick: {obj.id} slipped out of the {arm} gripper while lifting'
            )
        grip = Grip(arm, obj.id, height, obj.position - grasp, steps)
        self.grips[arm] = grip
        return grip

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
        release = center - grip.offset
        above = release + [0.0, 0.0, approach]
        quat = self._quat_for(arm, [above, release])
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
        steps = [self.execute('open_gripper', dict(arm=arm, target=1.0))]
        self.grips.pop(arm, None)
        return steps + self._retreat(arm, lift, quat)

    def _retreat(self, arm: str, lift: float, quat) -> list[Execution]:
        tcp = np.array(getattr(self.state(), arm).tcp) + [0.0, 0.0, lift]
        if quat is None or not self.reachable(arm, tcp, quat):
            quat = self._quat_for(arm, [tcp])
        if quat is None:
            return []
        return [self._move(arm, tcp, quat)]
