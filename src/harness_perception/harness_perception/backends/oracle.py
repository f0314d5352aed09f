"""The `oracle` backend: the simulator's instance segmentation and object labels say which
pixels belong to which object; the geometry is measured from those pixels' depth like every
backend's. Ground truth for tests and a comparison for `pixels`; no real camera has it."""

from __future__ import annotations

import numpy as np
from harness_types.camera import CameraView
from harness_types.robot_state import RobotState

from harness_perception.colour import colour_of
from harness_perception.measure import measure_all
from harness_perception.seam import Detection

MIN_PIXELS = 12  # fewer segmented pixels than this in a camera: not seen by it


class OraclePerception:
    name = 'oracle'
    needs_segmentation = True
    reads_query = False

    def __init__(self, table_top_z: float) -> None:
        self.table_top_z = table_top_z

    def detect(
        self, views: list[CameraView], state: RobotState | None, query: str = ''
    ) -> list[Detection]:
        found: dict[int, dict] = {}
        for view in views:
            if view.segmentation is None or view.depth is None:
                continue
            for instance, label in enumerate(view.labels):
                points, rgb = view.lift(view.segmentation == instance)
                if len(points) < MIN_PIXELS:
                    continue
                entry = found.setdefault(instance, {'label': label, 'p': [], 'c': [], 'cams': []})
                entry['p'].append(points)
                entry['c'].append(rgb)
                entry['cams'].append(view.name)
        entries = [e for _instance, e in sorted(found.items())]
        measured = measure_all([np.concatenate(e['p']) for e in entries], self.table_top_z)
        return [
            Detection(colour_of(np.concatenate(e['c'])), m, sorted(e['cams']), label=e['label'])
            for e, m in zip(entries, measured, strict=True)
        ]


def make_backend(emb, urdf: str | None, url: str, timeout_s: float) -> OraclePerception:
    """The oracle backend (a perception plugin): the simulator's segmentation."""
    return OraclePerception(emb.table_top_z)
