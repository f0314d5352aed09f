"""Perception for `locate`: a backend finds objects in the camera views, the tracker keeps
their ids, the query picks the matches. See seam.py for the backends."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import numpy as np
from harness_types.camera import CameraView
from harness_types.plugins import builtin_plugins, load_plugin
from harness_types.robot_state import RobotState
from harness_types.scene import LocatedObject

from harness_perception.query import Query
from harness_perception.seam import Detection, PerceptionBackend, SharesPasses
from harness_perception.shared_passes import SharedPass, SharedPasses
from harness_perception.tracking import Tracker

__all__ = ['Detection', 'Perception', 'PerceptionBackend', 'builtin_backends', 'make_perception']


class Perception:
    """Locates objects with one backend; an object keeps its id for the whole episode.
    `shared`: passes shared with the station's other processes (shared_passes.py), used where
    the backend allows it (SharesPasses)."""

    def __init__(self, backend: PerceptionBackend, shared: SharedPasses | None = None) -> None:
        self.backend = backend
        self.tracker = Tracker()
        self._last: tuple[bytes, list[Detection]] | None = None  # the last pass, by its inputs
        self.shared = shared if isinstance(backend, SharesPasses) else None
        # How each detect() was answered: 'own' (a pass run here), 'repeated' (the last
        # pass's input again), 'shared' (a pass another process ran on the same input).
        self.pass_counts: Counter[str] = Counter()

    def detect(
        self, views: list[CameraView], state: RobotState | None = None, query: str = ''
    ) -> list[Detection]:
        """The backend's detections in `views`, one pass per distinct input: the locate()
        calls of one moment and the turn report's measurement right after it share the pass
        (a pixels pass costs ~0.1 s). The input is the views' content, the robot's joints and,
        for a backend whose detections depend on it, the query. Every pass of this backend goes
        through here: one that holds state between passes (pixels refits its table plane)
        then gives a repeated input the answer a fresh pass would. With `shared`, a pass
        another process ran on the same input is taken instead (and written for them)."""
        # A backend that does not say reads_query is taken to read it (a pass per query).
        reads_query = getattr(self.backend, 'reads_query', True)
        key = _input_key(views, state, query if reads_query else '')
        last = self._last
        if last is None or last[0] != key:
            last = self._last = (key, self._pass(key, views, state, query))
        else:
            self.pass_counts['repeated'] += 1
        return list(last[1])

    def _pass(
        self, key: bytes, views: list[CameraView], state: RobotState | None, query: str
    ) -> list[Detection]:
        if self.shared is None:
            self.pass_counts['own'] += 1
            return list(self.backend.detect(views, state, query))
        backend: SharesPasses = self.backend  # type: ignore[assignment]
        # The backend's class beside its own fingerprint: two plugins cannot share by accident.
        kind = f'{type(backend).__module__}.{type(backend).__qualname__}:{backend.fingerprint}'
        name = hashlib.blake2b(key + kind.encode(), digest_size=20).hexdigest()
        before = backend.pass_state()
        taken = self.shared.get(name)
        if taken is not None and (not taken.read_state or taken.state_before == before):
            try:
                backend.adopt_state(taken.state_after)
                self.pass_counts['shared'] += 1
                return list(taken.detections)
            except (ValueError, TypeError, KeyError):  # not this backend's state: run the pass
                pass
        self.pass_counts['own'] += 1
        detections = list(self.backend.detect(views, state, query))
        self.shared.put(
            name, SharedPass(detections, before, backend.read_state, backend.pass_state())
        )
        return detections

    def table_top_z(self, nominal: float) -> float:
        """The table top's height (m, world) as the backend measured it (pixels fits the table
        plane on every pass), or `nominal` before its first pass or for a backend that does not
        measure it."""
        measured = getattr(self.backend, 'table_top_z', None)
        return float(measured) if measured is not None else nominal

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
        detections = self.detect(views, state, query)
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


def _input_key(views: list[CameraView], state: RobotState | None, query: str) -> bytes:
    """A digest of everything a detection pass reads (hashing ~3 MB of images takes ~3 ms)."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(query.encode())
    for v in views:
        digest.update(repr((v.name, v.time, v.fx, v.fy, v.cx, v.cy, v.labels)).encode())
        for array in (v.position, v.rotation, v.rgb, v.depth, v.segmentation):
            digest.update(b'-' if array is None else _bytes(array))
    if state is not None:
        for arm in (state.left, state.right):
            digest.update(_bytes(np.concatenate([arm.joints, arm.fingers, [arm.gripper]])))
    return digest.digest()


def _bytes(array: np.ndarray) -> bytes:
    a = np.ascontiguousarray(array)
    return repr((a.dtype.str, a.shape)).encode() + a.tobytes()


BACKENDS = 'harness_perception.backends'  # the folder of the built-in backends
FACTORY = 'make_backend'  # what a backend's module defines (see make_perception)


def make_perception(
    backend: str,
    emb,
    urdf: str | None = None,
    service_url: str = '',
    service_timeout_s: float = 10.0,
    shared_passes: Path | None = None,
) -> Perception:
    """The Perception of a configured backend (`kernel.perception`: a plugin, see
    harness_types.plugins): its module's `make_backend(emb, urdf, url, timeout_s)`; `urdf`
    None is the station's. `shared_passes`: the station's folder of shared passes (None: this
    perception's passes are its own). PluginError when there is no such backend."""
    factory = load_plugin('perception backend', BACKENDS, backend, FACTORY)
    shared = SharedPasses(shared_passes) if shared_passes is not None else None
    return Perception(factory(emb, urdf, service_url, service_timeout_s), shared)


def builtin_backends() -> list[str]:
    return builtin_plugins(BACKENDS)
