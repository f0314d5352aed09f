"""Perception for `locate`: a backend finds objects in the camera views, the tracker keeps
their ids, the query picks the matches. See seam.py for the backends."""

from __future__ import annotations

from harness_types.camera import CameraView
from harness_types.robot_state import RobotState
from harness_types.scene import LocatedObject

from harness_kernel.perception.query import Query
from harness_kernel.perception.seam import Detection, PerceptionBackend
from harness_kernel.perception.tracking import Tracker

__all__ = ['Detection', 'Perception', 'PerceptionBackend', 'make_perception']


class Perception:
    """Locates objects with one backend; an object keeps its id for the whole episode."""

    def __init__(self, backend: PerceptionBackend) -> None:
        self.backend = backend
        self.tracker = Tracker()

    @property
    def needs_segmentation(self) -> bool:
        return self.backend.needs_segmentation

    def known_ids(self) -> list[str]:
        """Ids handed out so far, in order."""
        return self.tracker.ids()

    def locate(
        self, views: list[CameraView], state: RobotState | None = None, query: str = ''
    ) -> list[LocatedObject]:
        """Every object the views show that matches `query` (all for ''), in the order their
        ids were first given; an empty list when nothing matches."""
        detections = self.backend.detect(views, state, query)
        ids = self.tracker.assign(detections)
        order = {i: n for n, i in enumerate(self.tracker.ids())}
        q = Query.parse(query)
        found = [
            LocatedObject(
                i, d.name, d.measured.position, d.measured.size, d.measured.top, d.cameras
            )
            for i, d in sorted(zip(ids, detections, strict=True), key=lambda x: order[x[0]])
            if q.matches(d.words)
        ]
        return q.select(found)


def make_perception(
    backend: str,
    emb,
    urdf: str | None = None,
    service_url: str = '',
    service_timeout_s: float = 10.0,
) -> Perception:
    """The Perception of a configured backend (`kernel.perception`); `pixels` reads the robot's
    links from `urdf` (default: the station's)."""
    if backend == 'pixels':
        from arx_x5_description.urdf import station_urdf
        from harness_kernel.perception.pixels import PixelPerception, Table
        from harness_kernel.perception.robot_body import RobotBody

        table = Table(emb.table_top_z, tuple(emb.table_x), tuple(emb.table_y))
        body = RobotBody(urdf if urdf is not None else station_urdf(), emb)
        return Perception(PixelPerception(table, body))
    if backend == 'oracle':
        from harness_kernel.perception.oracle import OraclePerception

        return Perception(OraclePerception(emb.table_top_z))
    if backend == 'service':
        from harness_kernel.perception.service import ServicePerception

        return Perception(ServicePerception(service_url, emb.table_top_z, service_timeout_s))
    from harness_types.config import PERCEPTION_BACKENDS

    known = ', '.join(PERCEPTION_BACKENDS)
    raise ValueError(f'unknown perception backend {backend!r}; known: {known}')
