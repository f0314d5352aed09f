"""Camera-based perception for `locate`: objects from RGB-D images with instance segmentation.

Each camera's segmented pixels are back-projected with depth and the camera's intrinsics and
pose into world points; the points of all cameras that see an object are merged. The object's
x, y come from its top surface (the highest points: for a box its top face, for a bowl its rim),
its height from the top above the table, its footprint from the spread of all its points. No
simulator state is read: only what the cameras delivered.
"""

from __future__ import annotations

import numpy as np
from harness_types.camera import CameraView
from harness_types.scene import LocatedObject

TOP_BAND_M = 0.006  # points this close below the highest count as the top surface
MIN_PIXELS = 12  # fewer segmented pixels than this in a camera: not seen by it


def matches(label: str, query: str) -> bool:
    """Every word of the query appears in the label ('' or 'all' match everything)."""
    words = query.lower().replace('_', ' ').split()
    if not words or words == ['all']:
        return True
    text = label.lower()
    return all(w in text or (w.endswith('s') and w[:-1] in text) for w in words)


class Perception:
    """Locates objects; an object keeps its id for the whole episode."""

    def __init__(self, table_top_z: float) -> None:
        self.table_top_z = table_top_z
        self._ids: dict[tuple[str, int], str] = {}

    def _id(self, label: str, instance: int) -> str:
        key = (label, instance)
        if key not in self._ids:
            base = label.lower().replace(' ', '_')
            same = sum(1 for (lab, _i) in self._ids if lab == label)
            self._ids[key] = base if same == 0 else f'{base}_{same + 1}'
        return self._ids[key]

    def known_ids(self) -> list[str]:
        """Ids handed out so far, in order."""
        return list(self._ids.values())

    def locate(self, views: list[CameraView], query: str = '') -> list[LocatedObject]:
        found: dict[int, dict] = {}
        for view in views:
            if view.segmentation is None or view.depth is None:
                continue
            for instance, label in enumerate(view.labels):
                if not matches(label, query):
                    continue
                mask = view.segmentation == instance
                if int(mask.sum()) < MIN_PIXELS:
                    continue
                points = view.back_project(mask)
                if len(points) < MIN_PIXELS:
                    continue
                entry = found.setdefault(instance, {'label': label, 'points': [], 'cameras': []})
                entry['points'].append(points)
                entry['cameras'].append(view.name)
        out = []
        for instance, entry in sorted(found.items()):
            points = np.concatenate(entry['points'])
            top = float(np.percentile(points[:, 2], 99))
            surface = points[points[:, 2] >= top - TOP_BAND_M]
            lo, hi = (
                np.percentile(points[:, :2], 1, axis=0),
                np.percentile(points[:, :2], 99, axis=0),
            )
            center_xy = surface[:, :2].mean(axis=0)
            if len(surface) < 0.05 * len(points):  # no clear top (a ring or a slope): use the box
                center_xy = (lo + hi) / 2
            height = max(0.0, top - self.table_top_z)
            position = np.array([center_xy[0], center_xy[1], self.table_top_z + height / 2])
            size = np.array([hi[0] - lo[0], hi[1] - lo[1], height])
            out.append(
                LocatedObject(
                    self._id(entry['label'], instance),
                    entry['label'],
                    position,
                    size,
                    top,
                    entry['cameras'],
                )
            )
        return out
