"""Objects from RGB-D images and calibration alone (what a real camera can feed).

Every camera's pixels are lifted to world points with their depth, intrinsics and pose. The
table is a fitted plane: points above it, and points on it whose colour is not the table's (a
zone drawn on it), are candidates; points inside the robot's links at the measured joint state
are dropped. What is left is clustered in 3-D over all cameras at once (an object seen by two
cameras is one cluster), a cluster of several clear colours is split by colour (a block on
another), and each object is measured from its own points (`measure`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

# np.median asks numpy for its masked arrays (`np.ma`), which numpy imports on first use: ~7
# ms of the first pass in a process (a kernel's first locate()), here with the module instead.
import numpy.ma
from harness_types.camera import CameraView
from harness_types.robot_state import RobotState

from harness_perception.clusters import components
from harness_perception.colour import CHROMATIC, colour_of, families
from harness_perception.measure import measure_all
from harness_perception.robot_body import RobotBody
from harness_perception.seam import Detection

MAX_RANGE_M = 2.5  # farther depth is background
PLANE_BAND_M = 0.02  # points this close to the nominal table height fit the plane
ON_PLANE_M = 0.004  # within this of the plane: the table itself (or something drawn on it)
FOREIGN_CHROMA = 0.06  # an on-plane point this far from the table's chromaticity is not table
CLUSTER_VOXEL_M = 0.006  # voxels of this size that touch belong to one object
MIN_POINTS = 40  # smaller clusters are noise (depth edges, link corners)
MAJOR_SHARE = 0.03  # a colour with this share of a cluster (and MIN_MAJOR_POINTS) is an object
MIN_MAJOR_POINTS = 40
# ... or this many points, whatever its share: a small part of another colour on a big object
# (a drawer's handle is ~1% of its cabinet's points; noise colours stay under ~20 points).
ENOUGH_MAJOR_POINTS = 200
HELD_M = 0.015  # an object piece this close to a hand is held by it
MAX_HEIGHT_M = 0.6  # higher above the table is not on it (the arms' upper links, the room)
EDGE_M = 0.01  # points this close to the table's edge are its rim, not objects


@dataclass(frozen=True)
class Table:
    """The table's nominal top height and extent (m, world)."""

    top_z: float
    x: tuple[float, float]
    y: tuple[float, float]


def _chroma(rgb: np.ndarray) -> np.ndarray:
    c = rgb.astype(float) + 1.0
    return c[:, :2] / c.sum(axis=1, keepdims=True)


def _chroma_distance(rgb: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Each colour's distance in chromaticity from `reference`: the values of
    `np.linalg.norm(_chroma(rgb) - reference, axis=1)` to the bit, column by column (the sums of
    uint8 + 1 are exact, and the norm of two numbers is sqrt(a*a + b*b)), without the reductions
    along the short axis that made it the slowest step of a pass."""
    r, g, b = (rgb[:, k].astype(float) + 1.0 for k in range(3))
    total = r + g + b
    dr = r / total - reference[0]
    dg = g / total - reference[1]
    return np.sqrt(dr * dr + dg * dg)


def _fit_plane(points: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(a, b, c) of z = a x + b y + c through `points[rows]`, refit on its inliers."""
    step = max(1, len(rows) // 20000)
    sample = points[rows[::step]]
    coef = np.array([0.0, 0.0, float(np.median(sample[:, 2]))])
    for _ in range(3):
        residual = sample[:, 2] - (sample[:, :2] @ coef[:2] + coef[2])
        inliers = sample[np.abs(residual) < max(ON_PLANE_M, 3 * np.median(np.abs(residual)))]
        if len(inliers) < 3:
            break
        a = np.column_stack([inliers[:, :2], np.ones(len(inliers))])
        coef, *_ = np.linalg.lstsq(a, inliers[:, 2], rcond=None)
    return coef


class PixelPerception:
    """The `pixels` backend. `detect` needs the measured robot state to drop the robot's own
    points; without it (None) the arms in view are found as objects too."""

    name = 'pixels'
    needs_segmentation = False
    reads_query = False

    def __init__(self, table: Table, body: RobotBody, configuration: str = '') -> None:
        """`configuration`: what else a pass depends on beyond `table`, in the fingerprint of
        passes shared between processes (SharesPasses): make_backend gives the robot body's
        (RobotBody.configuration), so that two processes share passes only when they see the
        robot's links alike."""
        self.table = table
        self.body = body
        self.plane = np.array([0.0, 0.0, table.top_z])
        self.fitted = False  # the plane is nominal until a pass fits it
        self.read_state = False  # whether the last pass used the plane it found (no refit)
        self.fingerprint = hashlib.blake2b(
            repr((self.name, table, configuration)).encode(), digest_size=16
        ).hexdigest()

    def pass_state(self) -> dict:
        """The table plane kept between passes, as JSON (a pass reads it only when too little
        of the table is seen to fit one)."""
        return {'plane': self.plane.tolist(), 'fitted': self.fitted}

    def adopt_state(self, state: dict) -> None:
        """Take on `state` (pass_state's form); ValueError, and nothing changed, when it is
        not one."""
        plane, fitted = state.get('plane'), state.get('fitted')
        numbers = isinstance(plane, list) and len(plane) == 3
        numbers = numbers and all(type(v) in (int, float) for v in plane)
        if not numbers or not isinstance(fitted, bool):
            raise ValueError(f'not a pixels state: {state!r:.200}')
        self.plane = np.array(plane, dtype=float)
        self.fitted = fitted

    @property
    def table_top_z(self) -> float | None:
        """The fitted table plane's height below the arms' workspace centre (world x = y = 0);
        None before a pass has fitted it."""
        return float(self.plane[2]) if self.fitted else None

    def detect(
        self, views: list[CameraView], state: RobotState | None, query: str = ''
    ) -> list[Detection]:
        points, colours, cams = [], [], []
        t = self.table
        self.read_state = False

        def over_the_table(p: np.ndarray) -> np.ndarray:
            return (
                (p[:, 0] > t.x[0] + EDGE_M)
                & (p[:, 0] < t.x[1] - EDGE_M)
                & (p[:, 1] > t.y[0] + EDGE_M)
                & (p[:, 1] < t.y[1] - EDGE_M)
                & (p[:, 2] > t.top_z - PLANE_BAND_M)
                & (p[:, 2] < t.top_z + MAX_HEIGHT_M)
            )

        for i, view in enumerate(views):
            if view.depth is None or view.rgb is None:
                continue
            p, c = view.lift(view.depth < MAX_RANGE_M, over_the_table)
            points.append(p)
            colours.append(c)
            cams.append(np.full(len(p), i))
        if not points:  # the plane stays as it was: what the pass leaves is what it found
            self.read_state = True
            return []
        p, c, cam = np.concatenate(points), np.concatenate(colours), np.concatenate(cams)
        near = np.flatnonzero(np.abs(p[:, 2] - self.table.top_z) < PLANE_BAND_M)
        if len(near) > 100:
            self.plane = _fit_plane(p, near)
            self.fitted = True
        else:
            self.read_state = True
        height = p[:, 2] - (p[:, :2] @ self.plane[:2] + self.plane[2])
        on_plane = np.abs(height) <= ON_PLANE_M
        # Something drawn on the table differs from it in chromaticity and in colour name
        # (shadows and the lighting's gradient change neither). Colours are named only where
        # a name is read: most points are plain table.
        on = np.nonzero(on_plane)[0]
        step = max(1, len(on) // 20000)
        table = c[on[::step]]
        foreign = np.zeros(len(c), dtype=bool)
        if len(table):
            table_family = np.bincount(families(table) + 1).argmax() - 1
            chroma = _chroma_distance(c[on], np.median(_chroma(table), 0))
            odd = on[chroma > FOREIGN_CHROMA]
            odd_fam = families(c[odd])
            foreign[odd[(odd_fam != table_family) & (odd_fam >= 0)]] = True
        candidates = np.flatnonzero((height > ON_PLANE_M) | (on_plane & foreign))
        p, c, cam = p[candidates], c[candidates], cam[candidates]
        fam = families(c)
        boxes = self.body.boxes_at(state) if state is not None else []
        robot = self.body.contains(p, boxes)
        p, c, cam, fam = p[~robot], c[~robot], cam[~robot], fam[~robot]
        labels = components(p, CLUSTER_VOXEL_M)
        parts: list[np.ndarray] = []
        # Each cluster's points in ascending order, from one stable sort (not a pass over all
        # points per cluster: depth edges make hundreds of small clusters).
        order = np.argsort(labels, kind='stable')
        start = 0
        for count in np.bincount(labels).tolist() if len(labels) else []:
            members, start = order[start : start + count], start + count
            if len(members) >= MIN_POINTS:
                parts += [q for q in self._by_colour(members, fam, p) if len(q) >= MIN_POINTS]
        hands = [self.body.near_hand(p[q], boxes, HELD_M) for q in parts]
        parts, hands = _join_held_pieces(parts, hands, fam)
        tables = [float(self.plane[2] + p[q, :2].mean(axis=0) @ self.plane[:2]) for q in parts]
        measured = measure_all([p[q] for q in parts], tables, [bool(h) for h in hands])
        return [
            Detection(colour_of(c[q]), m, sorted({views[i].name for i in np.unique(cam[q])}))
            for q, m in zip(parts, measured, strict=True)
        ]

    @staticmethod
    def _by_colour(members: np.ndarray, fam: np.ndarray, p: np.ndarray) -> list[np.ndarray]:
        """The objects of one cluster: one per clear colour (a minor colour, e.g. a cube's
        printed dots or a shaded edge, stays with the cluster when it has one clear colour)."""
        counts = np.bincount(fam[members] + 1, minlength=len(CHROMATIC) + 2)[1:]
        need = max(MIN_MAJOR_POINTS, min(ENOUGH_MAJOR_POINTS, MAJOR_SHARE * int(counts.sum())))
        major = [f for f in range(len(counts)) if counts[f] >= need]
        if len(major) <= 1:
            return [members]
        parts = []
        for f in major:
            part = members[fam[members] == f]
            sub = components(p[part], CLUSTER_VOXEL_M)  # one colour may be two objects
            parts += [part[sub == k] for k in range(int(sub.max()) + 1)]
        return parts


def _join_held_pieces(
    parts: list[np.ndarray], hands: list[list[str]], fam: np.ndarray
) -> tuple[list[np.ndarray], list[list[str]]]:
    """A held object is seen in pieces (the fingers and the hand hide its middle): pieces of
    one colour at the same hand are one object."""
    main = [int(np.bincount(fam[q] + 1).argmax()) - 1 for q in parts]
    merged: list[np.ndarray] = []
    merged_hands: list[list[str]] = []
    key_of: dict[tuple[str, int], int] = {}
    for q, hand, colour in zip(parts, hands, main, strict=True):
        at = next((key_of[(arm, colour)] for arm in hand if (arm, colour) in key_of), None)
        if at is None:
            merged.append(q)
            merged_hands.append(list(hand))
            at = len(merged) - 1
        else:
            merged[at] = np.concatenate([merged[at], q])
        for arm in hand:
            key_of[(arm, colour)] = at
    return merged, merged_hands


def make_backend(emb, urdf: str | None, url: str, timeout_s: float) -> PixelPerception:
    """The pixels backend (a perception plugin): the table from the embodiment, the robot's
    links from `urdf` (default: the station's)."""
    from arx_x5_description.urdf import station_urdf

    table = Table(emb.table_top_z, tuple(emb.table_x), tuple(emb.table_y))
    body = RobotBody(urdf if urdf is not None else station_urdf(), emb)
    return PixelPerception(table, body, configuration=body.configuration)
