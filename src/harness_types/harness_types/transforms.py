"""Rotations and quaternions (w, x, y, z), in numpy: the one place the harness converts them."""

from __future__ import annotations

import math

import numpy as np


def quat_to_matrix(quat) -> np.ndarray:
    """The 3x3 rotation of a quaternion (w, x, y, z); it is normalised first (ValueError for a
    zero or non-finite quaternion)."""
    q = np.asarray(quat, dtype=float)
    norm = float(np.linalg.norm(q))
    if q.shape != (4,) or not math.isfinite(norm) or norm < 1e-9:
        raise ValueError(f'a quaternion must be 4 finite numbers, not all 0: got {q.tolist()}')
    w, x, y, z = q / norm
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat(rotation) -> np.ndarray:
    """The unit quaternion (w, x, y, z) of a 3x3 rotation, with w >= 0."""
    r = np.asarray(rotation, dtype=float)
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    if trace > 0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = [0.25 * s, (r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s]
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = [(r[2, 1] - r[1, 2]) / s, 0.25 * s, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s]
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = [(r[0, 2] - r[2, 0]) / s, (r[0, 1] + r[1, 0]) / s, 0.25 * s, (r[1, 2] + r[2, 1]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = [(r[1, 0] - r[0, 1]) / s, (r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, 0.25 * s]
    # Not renormalised: for a rotation matrix the result is unit to rounding, and callers
    # compare orientations computed before and after this change bit for bit.
    out = np.array(q)
    return -out if out[0] < 0 else out


def rpy_to_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF's fixed-axis roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cr, sr, cp, sp, cy, sy = (
        math.cos(roll),
        math.sin(roll),
        math.cos(pitch),
        math.sin(pitch),
        math.cos(yaw),
        math.sin(yaw),
    )
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def yaw_quat(yaw: float) -> np.ndarray:
    """The quaternion (w, x, y, z) of a turn by `yaw` rad about world z."""
    return np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)])


# The tool pitches a grasp from above may use, steepest first (straight down is the best grasp):
# pick scans them, and a sampled layout is feasible only where one of them reaches.
GRASP_PITCHES_DEG = tuple(range(90, 25, -5))


def tool_rotation(pitch: float) -> np.ndarray:
    """TCP orientation of a gripper pointing along world +y, pitched down by `pitch` rad
    (pi/2 = straight down), jaws opening along world x."""
    c, s = math.cos(pitch), math.sin(pitch)
    x = np.array([0.0, c, -s])
    y = np.array([-1.0, 0.0, 0.0])
    return np.column_stack([x, y, np.cross(x, y)])


def tool_quat(pitch_deg: float, yaw_deg: float = 0.0) -> list[float]:
    """`tool_rotation` of a pitch in degrees, turned by `yaw_deg` about world z, as a
    quaternion list (w, x, y, z). Yaw 90 points the tool along world -x (jaws along y)."""
    rotation = tool_rotation(math.radians(pitch_deg))
    if yaw_deg:
        rotation = quat_to_matrix(yaw_quat(math.radians(yaw_deg))) @ rotation
    return [float(v) for v in matrix_to_quat(rotation)]
