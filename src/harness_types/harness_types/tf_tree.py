"""The station's TF tree from its URDF, as robot_state_publisher computes it: each link
relative to its parent joint; fixed joints (bases, table, cameras and their optical frames) on
/tf_static, movable ones on /tf from the measured joint positions. No ROS here."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

from harness_types.transforms import matrix_to_quat, quat_to_matrix, rpy_to_matrix


@dataclass(frozen=True)
class Transform:
    """`child`'s pose in `parent`: translation (m) and quaternion (w, x, y, z)."""

    parent: str
    child: str
    translation: np.ndarray
    quat: np.ndarray


@dataclass(frozen=True)
class _Joint:
    name: str
    kind: str
    parent: str
    child: str
    xyz: np.ndarray
    rotation: np.ndarray
    axis: np.ndarray
    mimic: str | None
    multiplier: float
    offset: float
    quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)  # the origin's rotation
    unit_axis: tuple[float, float, float] = (1.0, 0.0, 0.0)


def floats(text: str | None, default: str) -> np.ndarray:
    """The numbers of a URDF attribute ("0.1 0 0"), or of `default` when it is absent."""
    return np.array([float(v) for v in (text or default).split()])


def origin_of(element: ET.Element) -> tuple[np.ndarray, np.ndarray]:
    """(xyz, rotation) of a URDF element's <origin> (identity when it has none)."""
    origin = element.find('origin')
    xyz = floats(origin.get('xyz') if origin is not None else None, '0 0 0')
    rpy = floats(origin.get('rpy') if origin is not None else None, '0 0 0')
    return xyz, rpy_to_matrix(*rpy)


class TfTree:
    """Parse once; `static()` and `moving(positions)` give the transforms."""

    def __init__(self, urdf: str) -> None:
        root = ET.fromstring(urdf)
        self.joints: list[_Joint] = []
        for j in root.findall('joint'):
            axis = j.find('axis')
            mimic = j.find('mimic')
            xyz, rotation = origin_of(j)
            axis_xyz = floats(axis.get('xyz') if axis is not None else None, '1 0 0')
            unit = axis_xyz / (np.linalg.norm(axis_xyz) or 1.0)
            self.joints.append(
                _Joint(
                    j.get('name'),
                    j.get('type'),
                    j.find('parent').get('link'),
                    j.find('child').get('link'),
                    xyz,
                    rotation,
                    axis_xyz,
                    mimic.get('joint') if mimic is not None else None,
                    float(mimic.get('multiplier', 1.0)) if mimic is not None else 1.0,
                    float(mimic.get('offset', 0.0)) if mimic is not None else 0.0,
                    tuple(float(v) for v in matrix_to_quat(rotation)),
                    tuple(float(v) for v in unit),
                )
            )
        children = {j.child for j in self.joints}
        self.roots = sorted({j.parent for j in self.joints} - children)
        self.moving_joints = [j.name for j in self.joints if j.kind not in ('fixed',)]

    def static(self) -> list[Transform]:
        return [self._transform(j, 0.0) for j in self.joints if j.kind == 'fixed']

    @staticmethod
    def position(joint, positions: dict[str, float]) -> float:
        """`joint`'s position in `positions`: a mimic joint follows its leader, a joint with
        no position stays at 0."""
        if joint.name in positions:
            return positions[joint.name]
        if joint.mimic is not None:
            return positions.get(joint.mimic, 0.0) * joint.multiplier + joint.offset
        return 0.0

    def moving(self, positions: dict[str, float]) -> list[Transform]:
        """Transforms of the movable joints (`position` of each)."""
        return [
            self._transform(j, self.position(j, positions))
            for j in self.joints
            if j.kind != 'fixed'
        ]

    def world(self, positions: dict[str, float]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Every link's pose in the world (the roots' frame): (rotation, translation)."""
        local = {t.child: t for t in self.static() + self.moving(positions)}
        poses: dict[str, tuple[np.ndarray, np.ndarray]] = {
            r: (np.eye(3), np.zeros(3)) for r in self.roots
        }
        pending = [j.child for j in self.joints]
        while pending:  # parents before children, whatever the URDF's order
            later = []
            for link in pending:
                t = local[link]
                if t.parent not in poses:
                    later.append(link)
                    continue
                pr, pt = poses[t.parent]
                poses[link] = (pr @ quat_to_matrix(t.quat), pt + pr @ t.translation)
            if len(later) == len(pending):
                raise ValueError(f'links not reachable from a root: {", ".join(later)}')
            pending = later
        return poses

    @staticmethod
    def _transform(j: _Joint, q: float) -> Transform:
        """The joint's transform at position `q`. A revolute joint's rotation is the origin's
        quaternion times the rotation about its axis, in plain floats: with matrices and
        numpy's small-array calls this was ~1 ms a tick for the station's 16 joints, the
        largest cost of publishing /tf."""
        w0, x0, y0, z0 = j.quat
        if j.kind in ('revolute', 'continuous'):
            c, s = math.cos(q / 2), math.sin(q / 2)
            ax, ay, az = (a * s for a in j.unit_axis)
            w = w0 * c - (x0 * ax + y0 * ay + z0 * az)
            x = w0 * ax + x0 * c + (y0 * az - z0 * ay)
            y = w0 * ay + y0 * c + (z0 * ax - x0 * az)
            z = w0 * az + z0 * c + (x0 * ay - y0 * ax)
            quat = np.array((w, x, y, z) if w >= 0 else (-w, -x, -y, -z))
            return Transform(j.parent, j.child, j.xyz.copy(), quat)
        translation = j.xyz.copy()
        if j.kind == 'prismatic':
            translation = translation + j.rotation @ (np.asarray(j.unit_axis) * q)
        return Transform(j.parent, j.child, translation, np.array(j.quat))
