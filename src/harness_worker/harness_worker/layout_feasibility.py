"""Whether a sampled layout is feasible on this station: the arms' kinematics and the head camera
answer harness_bench.layout's `Feasibility` questions."""

from __future__ import annotations

import copy
import math

import numpy as np
from arx_x5_description.embodiment import Embodiment
from harness_types.transforms import GRASP_PITCHES_DEG, rpy_to_matrix, tool_rotation

from harness_worker.kinematics import StationKinematics

APPROACH_M = 0.10  # a grasp comes down to its point from this much higher
# A task builds its objects a few millimetres and a turn of up to ~6 degrees off the sampled
# spot (a 32 cm tray's handle moves up to 13 mm), and locate measures them to a few mm: a pitch
# counts only when it also reaches this far from the point in x and y, at both heights.
MARGIN_M = 0.015
EDGE_PX = 40  # a point this close to the head image's edge does not count as seen


class StationFeasibility:
    """Answers for harness_bench.layout: points are x, y in the world and z above the table."""

    def __init__(self, kinematics: StationKinematics, emb: Embodiment, camera: str = 'cam_head'):
        self.kinematics = kinematics
        self.table_top_z = emb.table_top_z
        cam = emb.cameras[camera]
        if cam.parent != 'world':
            raise ValueError(f'camera {camera} must be fixed in the world, not on {cam.parent}')
        body = rpy_to_matrix(*cam.rpy)  # x forward, z up
        # The optical frame: z forward, x right, y down.
        self._rotation = np.column_stack([-body[:, 1], -body[:, 2], body[:, 0]])
        self._position = np.array(cam.xyz, dtype=float)
        self._f = 0.5 * cam.height / math.tan(math.radians(cam.fovy_deg) / 2)
        self._size = (cam.width, cam.height)

    def moved(self, table_offset_m: float) -> StationFeasibility:
        """The same station with its table top `table_offset_m` higher (a scene variation)."""
        if not table_offset_m:
            return self
        moved = copy.copy(self)
        moved.table_top_z = self.table_top_z + table_offset_m
        return moved

    def _world(self, point: np.ndarray) -> np.ndarray:
        return np.asarray(point, dtype=float) + [0.0, 0.0, self.table_top_z]

    def reachable(self, arm: str, point: np.ndarray, pitch: float = 50.0) -> bool:
        """Some grasp pitch pick scans, `pitch` degrees or steeper, reaches the point and
        10 cm above it, and `MARGIN_M` around both in x and y."""
        kin = self.kinematics.arms[arm]
        p = self._world(point)
        around = [[0.0, 0.0], [MARGIN_M, 0.0], [-MARGIN_M, 0.0], [0.0, MARGIN_M], [0.0, -MARGIN_M]]
        # the point and the one above first: a pitch that misses them is dropped quickly
        points = [p + [dx, dy, dz] for dx, dy in around for dz in (0.0, APPROACH_M)]
        # The answer is whether any pitch reaches, so the order of the pitches does not change
        # it; the shallowest first: where a spot is reached at all, it nearly always is (a
        # steep grasp is what misses a far spot), and an IK that fails costs ~30 that succeed
        # (the shallow-first order took 0.17 -> ~0.05 s off a sampled layout's reset).
        for steep in sorted(s for s in GRASP_PITCHES_DEG if s >= pitch):
            rotation = tool_rotation(math.radians(steep))
            if all(kin.ik(q, rotation).ok for q in points):
                return True
        return False

    def in_view(self, point: np.ndarray) -> bool:
        local = (self._world(point) - self._position) @ self._rotation
        if local[2] <= 0.05:
            return False
        width, height = self._size
        u = self._f * local[0] / local[2] + width / 2
        v = self._f * local[1] / local[2] + height / 2
        return EDGE_PX <= u <= width - EDGE_PX and EDGE_PX <= v <= height - EDGE_PX
