"""Ids that stay the same from turn to turn: a new detection takes the id of the known object
with the same name nearest to it, or of the same shape within a few centimetres (a button
that changed colour when it latched); anything else gets a new id."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness_perception.seam import Detection

SAME_SHAPE_M = 0.05  # an object of the same shape but a new name this close keeps its id
RENAMED_COST = 1.0  # prefer any same-name match to a renamed one


@dataclass
class Track:
    id: str
    name: str
    shape: str
    position: np.ndarray


class Tracker:
    def __init__(self) -> None:
        self.tracks: list[Track] = []

    def ids(self) -> list[str]:
        return [t.id for t in self.tracks]

    def _new_id(self, name: str) -> str:
        base = name.lower().replace(' ', '_')
        taken = set(self.ids())
        n = sum(1 for t in self.tracks if t.name == name) + 1
        while (f'{base}_{n}' if n > 1 else base) in taken:  # a label may end in a number
            n += 1
        return f'{base}_{n}' if n > 1 else base

    def assign(self, detections: list[Detection]) -> list[str]:
        """An id for each detection (greedy, cheapest pair first; deterministic)."""
        pairs = []
        for i, d in enumerate(detections):
            for j, t in enumerate(self.tracks):
                gap = float(np.linalg.norm(d.measured.position[:2] - t.position[:2]))
                if t.name == d.name:
                    pairs.append((gap, i, j))
                elif t.shape == d.measured.shape and gap < SAME_SHAPE_M:
                    pairs.append((gap + RENAMED_COST, i, j))
        ids: list[str | None] = [None] * len(detections)
        taken: set[int] = set()
        for _cost, i, j in sorted(pairs):
            if ids[i] is None and j not in taken:
                ids[i], taken = self.tracks[j].id, taken | {j}
        # new objects get ids left to right, so the first locate's order is the table's
        for i in sorted(
            (i for i in range(len(detections)) if ids[i] is None),
            key=lambda i: (detections[i].measured.position[0], detections[i].measured.position[1]),
        ):
            d = detections[i]
            track = Track(self._new_id(d.name), d.name, d.measured.shape, d.measured.position)
            self.tracks.append(track)
            ids[i] = track.id
        by_id = {t.id: t for t in self.tracks}
        for i, d in enumerate(detections):
            by_id[ids[i]].position = d.measured.position
        return [str(i) for i in ids]
