"""The robot's own volume at a measured joint state: each link's collision box from the URDF,
placed by forward kinematics, so perception can drop the points that belong to the robot."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
from arx_x5_description.embodiment import ARMS, Embodiment
from harness_types.robot_state import RobotState
from harness_types.tf_tree import TfTree
from harness_types.transforms import quat_to_matrix, rpy_to_matrix

MARGIN_M = 0.003  # points this close to a link's box count as the link (depth noise, rounding)


def _floats(text: str | None, default: str) -> np.ndarray:
    return np.array([float(v) for v in (text or default).split()])


class RobotBody:
    """Collision boxes of the arm links (every link below an arm's mount) of a URDF."""

    def __init__(self, urdf: str, emb: Embodiment, margin: float = MARGIN_M) -> None:
        self.tree = TfTree(urdf)
        self.emb = emb
        self.margin = margin
        parent_of = {j.child: j.parent for j in self.tree.joints}
        # An arm's hand: the links its finger joints join (the wrist link and the fingers).
        fingers = (emb.gripper.joint, emb.gripper.mimic_joint)
        self.hands = {
            arm: sorted(
                {
                    link
                    for j in self.tree.joints
                    if j.name in {f'{arm}_{f}' for f in fingers}
                    for link in (j.parent, j.child)
                }
            )
            for arm in ARMS
        }
        self.boxes: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []
        for link in ET.fromstring(urdf).findall('link'):
            name = link.get('name')
            if not any(name.startswith(f'{arm}_') for arm in ARMS) or name not in parent_of:
                continue
            for collision in link.findall('collision'):
                box = collision.find('geometry/box')
                if box is None:
                    continue
                origin = collision.find('origin')
                xyz = _floats(origin.get('xyz') if origin is not None else None, '0 0 0')
                rpy = _floats(origin.get('rpy') if origin is not None else None, '0 0 0')
                half = _floats(box.get('size'), '0 0 0') / 2
                self.boxes.append((name, xyz, rpy_to_matrix(*rpy), half))

    def joint_positions(self, state: RobotState) -> dict[str, float]:
        out: dict[str, float] = {}
        for arm in ARMS:
            a = state.arm(arm)
            out.update(zip(self.emb.arm_joint_names(arm), map(float, a.joints), strict=True))
            out[f'{arm}_{self.emb.gripper.joint}'] = float(a.fingers[0])
            out[f'{arm}_{self.emb.gripper.mimic_joint}'] = float(a.fingers[1])
        return out

    def link_poses(self, state: RobotState) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """World pose (rotation, translation) of every link at the measured state."""
        local = {
            t.child: (t.parent, quat_to_matrix(t.quat), t.translation)
            for t in self.tree.static() + self.tree.moving(self.joint_positions(state))
        }
        poses: dict[str, tuple[np.ndarray, np.ndarray]] = {}

        def pose(link: str) -> tuple[np.ndarray, np.ndarray]:
            if link not in poses:
                if link not in local:
                    poses[link] = (np.eye(3), np.zeros(3))  # a root: the world
                else:
                    parent, r, t = local[link]
                    pr, pt = pose(parent)
                    poses[link] = (pr @ r, pt + pr @ t)
            return poses[link]

        for name, *_ in self.boxes:
            pose(name)
        return poses

    def contains(
        self, points: np.ndarray, state: RobotState, links: str = '', margin: float | None = None
    ) -> np.ndarray:
        """Which of the world points (N x 3) lie within a link's box (plus the margin); `links`
        keeps only the links whose names start with it (e.g. 'left_link7')."""
        inside = np.zeros(len(points), dtype=bool)
        poses = self.link_poses(state)
        margin = self.margin if margin is None else margin
        for name, xyz, rotation, half in self.boxes:
            if not name.startswith(links):
                continue
            lr, lt = poses[name]
            r = lr @ rotation
            centre = lt + lr @ xyz
            local = (points - centre) @ r
            inside |= np.all(np.abs(local) <= half + margin, axis=1)
        return inside

    def near_gripper(self, points: np.ndarray, state: RobotState, distance: float) -> list[str]:
        """The arms whose hand (link6 and fingers) has one of the points within `distance`."""
        return [
            arm
            for arm in ARMS
            if any(self.contains(points, state, link, distance).any() for link in self.hands[arm])
        ]
