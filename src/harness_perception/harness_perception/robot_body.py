"""The robot's own volume at a measured joint state: each link's collision box from the URDF,
placed by forward kinematics, so perception can drop the points that belong to the robot."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
from arx_x5_description.embodiment import ARMS, Embodiment
from harness_types.robot_state import RobotState
from harness_types.tf_tree import TfTree, floats, origin_of

MARGIN_M = 0.003  # points this close to a link's box count as the link (depth noise, rounding)
# contains() tests the points against the bounds of this many neighbouring boxes first: the
# links of a run lie close together, so their bounds stay tight (all 18 at once span both arms).
BOXES_PER_RUN = 4


@dataclass(frozen=True)
class PlacedBox:
    """A link's collision box in the world: the box's axes as `rotation`'s columns."""

    link: str
    rotation: np.ndarray
    centre: np.ndarray
    half: np.ndarray


class RobotBody:
    """Collision boxes of the arm links (every link below an arm's mount) of a URDF."""

    def __init__(self, urdf: str, emb: Embodiment, margin: float = MARGIN_M) -> None:
        self.tree = TfTree(urdf)
        self.urdf = urdf
        self.margin = margin
        # Each arm's URDF joints in the order of its state: the arm's joints, then both fingers.
        self.joint_names: dict[str, tuple[str, ...]] = {
            arm: (
                *emb.arm_joint_names(arm),
                f'{arm}_{emb.gripper.joint}',
                f'{arm}_{emb.gripper.mimic_joint}',
            )
            for arm in ARMS
        }
        parent_of = {j.child: j.parent for j in self.tree.joints}
        # An arm's hand: the links its finger joints join (the wrist link and the fingers).
        self.hands: dict[str, set[str]] = {arm: set() for arm in ARMS}
        for arm in ARMS:
            for j in self.tree.joints:
                if j.name in self.joint_names[arm][-2:]:
                    self.hands[arm] |= {j.parent, j.child}
        self.boxes: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
        for link in ET.fromstring(urdf).findall('link'):
            name = link.get('name')
            if not any(name.startswith(f'{arm}_') for arm in ARMS) or name not in parent_of:
                continue
            for collision in link.findall('collision'):
                box = collision.find('geometry/box')
                if box is None:
                    continue
                xyz, rotation = origin_of(collision)
                self.boxes.append((name, xyz, rotation, floats(box.get('size'), '0 0 0') / 2))

    @property
    def configuration(self) -> str:
        """All that the boxes at a state depend on (the URDF, the margin, the joint names), in
        words: part of the fingerprint of the passes a station's processes share."""
        return repr((self.urdf, self.margin, self.joint_names))

    def joint_positions(self, state: RobotState) -> dict[str, float]:
        out: dict[str, float] = {}
        for arm in ARMS:
            a = state.arm(arm)
            values = [*map(float, a.joints), float(a.fingers[0]), float(a.fingers[1])]
            out.update(zip(self.joint_names[arm], values, strict=True))
        return out

    def boxes_at(self, state: RobotState) -> list[PlacedBox]:
        """Every link's box in the world at the measured state."""
        poses = self.tree.world(self.joint_positions(state))
        placed = []
        for name, xyz, rotation, half in self.boxes:
            lr, lt = poses[name]
            placed.append(PlacedBox(name, lr @ rotation, lt + lr @ xyz, half))
        return placed

    def contains(
        self, points: np.ndarray, boxes: list[PlacedBox], margin: float | None = None
    ) -> np.ndarray:
        """Which of the world points (N x 3) lie within one of the boxes (plus the margin)."""
        margin = self.margin if margin is None else margin
        inside = np.zeros(len(points), dtype=bool)
        if not boxes or not len(points):
            return inside
        # Each box's world-aligned bounds (padded by a micrometre against rounding); only the
        # points within them take the exact test: most of a view is far from any link. Boxes
        # are tested in runs of neighbours (links of one chain, in the URDF's order), the points
        # first against the bounds of the run.
        limits = [box.half + margin for box in boxes]
        reach = [np.abs(b.rotation) @ limit + 1e-6 for b, limit in zip(boxes, limits, strict=True)]
        low = [box.centre - r for box, r in zip(boxes, reach, strict=True)]
        high = [box.centre + r for box, r in zip(boxes, reach, strict=True)]
        for run in range(0, len(boxes), BOXES_PER_RUN):
            end = run + BOXES_PER_RUN
            # fmin/fmax: a box of NaN (unmeasured joints) matches nothing, as alone, and
            # leaves the bounds of the run's other boxes as they are
            lows, highs = np.fmin.reduce(low[run:end]), np.fmax.reduce(high[run:end])
            rows = _within(points, lows, highs)
            near_run = points[rows]
            for box, limit, lo, hi in zip(
                boxes[run:end], limits[run:end], low[run:end], high[run:end], strict=True
            ):
                near = rows[_within(near_run, lo, hi)]
                local = np.abs((points[near] - box.centre) @ box.rotation)
                # per axis, not np.all(axis=1): a reduction along the short axis is the slow part
                inside[near] |= (
                    (local[:, 0] <= limit[0])
                    & (local[:, 1] <= limit[1])
                    & (local[:, 2] <= limit[2])
                )
        return inside

    def near_hand(self, points: np.ndarray, boxes: list[PlacedBox], distance: float) -> list[str]:
        """The arms whose hand (the wrist link and the fingers) is within `distance` of one of
        the points."""
        return [
            arm
            for arm in ARMS
            if self.contains(
                points, [b for b in boxes if b.link in self.hands[arm]], distance
            ).any()
        ]


def _within(points: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Indices of the points (N x 3) within the axis-aligned bounds."""
    x, y, z = (points[:, k] for k in range(3))
    return np.flatnonzero(
        (x >= low[0])
        & (x <= high[0])
        & (y >= low[1])
        & (y <= high[1])
        & (z >= low[2])
        & (z <= high[2])
    )
