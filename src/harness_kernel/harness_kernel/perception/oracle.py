"""The `oracle` backend: the simulator's instance segmentation and object labels say which
pixels belong to which object; the geometry is measured from those pixels' depth like every
backend's. Ground truth for tests and a comparison for `pixels`; no real camera has it."""

from __future__ import annotations

import numpy as np
from harness_types.camera import CameraView
from harness_types.robot_state import RobotState

from harness_kernel.perception.colour import colour_of
from harness_kernel.perception.measure import covered, measure
from harness_kernel.perception.seam import Detection

MIN_PIXELS = 12  # fewer segmented pixels than this in a camera: not seen by it


class OraclePerception:
    name = 'oracle'
    needs_segmentation = True

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
                mask = view.segmentation == instance
                if int(mask.sum()) < MIN_PIXELS:
                    continue
                points = view.back_project(mask)
                if len(points) < MIN_PIXELS:
                    continue
                entry = found.setdefault(instance, {'label': label, 'p': [], 'c': [], 'cams': []})
                entry['p'].append(points)
                v, u = np.nonzero(mask & np.isfinite(view.depth) & (view.depth > 0.01))
                entry['c'].append(view.rgb[v, u])
                entry['cams'].append(view.name)
        entries = [e for _instance, e in sorted(found.items())]
        points = [np.concatenate(e['p']) for e in entries]
        out = []
        for e, p, under in zip(entries, points, covered(points), strict=True):
            m = measure(p, self.table_top_z, 'covered' if under else '')
            rgb = np.concatenate(e['c'])
            out.append(Detection(colour_of(rgb), m, sorted(set(e['cams'])), label=e['label']))
        return out
