"""What an object is and where, from its own points: shape, size, position, top. No table
assumption: an object resting on the table gets the table as its bottom, a held or stacked one
the lowest of its points."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness_perception.clusters import PACK_SPAN as _SPAN

TOP_BAND_M = 0.006  # points this close below the highest count as the top surface
RESTING_M = 0.015  # lowest point this close to the table: the object stands on it
FLAT_M = 0.008  # an object lower than this is a flat zone drawn on the table
OVERLAP_M = 0.005  # footprints this close count as overlapping (a face seen edge-on is a line)
VOXEL_M = 0.004  # points are averaged per voxel first, so a close camera does not outvote a far one

# The words a query may use for each shape (the first is the shape's name in labels).
SHAPE_WORDS: dict[str, tuple[str, ...]] = {
    'cube': ('cube', 'block', 'box'),
    'block': ('block', 'box', 'brick', 'handle'),  # a short handle measures as a block
    'bar': ('bar', 'block', 'box', 'stick', 'tray', 'plank', 'handle'),
    'bowl': ('bowl', 'bin', 'container'),
    'button': ('button', 'cylinder', 'disc'),
    'cylinder': ('cylinder', 'can', 'cup', 'peg'),
    'zone': ('zone', 'area', 'region', 'mat', 'patch'),
}


@dataclass(frozen=True)
class Measured:
    """One object's geometry: `position` the centre of its bounding box, `size` its extent
    (x, y, z), `top` the height of its top surface, `shape` a key of SHAPE_WORDS."""

    shape: str
    position: np.ndarray
    size: np.ndarray
    top: float


def voxel_means(points: np.ndarray, voxel: float = VOXEL_M) -> np.ndarray:
    """One point per occupied voxel (in the order of their x, y, z indices): the mean of the
    points in it. The voxel indices are packed into one int64 (a row-wise unique sorts ~5x
    slower) and summed with bincount, which adds in the points' order as np.add.at did: the
    same means to the bit."""
    if len(points) == 0:
        return np.zeros((0, 3))
    keys = np.floor(points / voxel).astype(np.int64)
    keys -= keys.min(axis=0)
    codes = (keys[:, 0] * _SPAN + keys[:, 1]) * _SPAN + keys[:, 2]
    _, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    sums = np.column_stack(
        [np.bincount(inverse, weights=points[:, k], minlength=len(counts)) for k in range(3)]
    )
    return sums.reshape(len(counts), 3) / counts[:, None]


def _hull(xy: np.ndarray) -> np.ndarray:
    """Convex hull (counter-clockwise) of 2-D points, Andrew's monotone chain."""
    pts = np.unique(np.round(xy, 5), axis=0)
    if len(pts) < 3:
        return pts

    def half(points):
        out: list = []
        for p in points:
            while len(out) >= 2:
                (ax, ay), (bx, by) = out[-2], out[-1]
                if (bx - ax) * (p[1] - ay) - (by - ay) * (p[0] - ax) > 0:
                    break
                out.pop()
            out.append(p)
        return out

    lower, upper = half(pts), half(pts[::-1])
    return np.array(lower[:-1] + upper[:-1])


def footprint(xy: np.ndarray) -> tuple[float, float, float]:
    """(long side, short side, fill) of the smallest rectangle around 2-D points; fill is the
    hull's share of that rectangle (a rectangle ~1, a disc ~0.79)."""
    hull = _hull(xy)
    if len(hull) < 3:
        return 0.0, 0.0, 0.0
    x, y = hull[:, 0], hull[:, 1]
    area = 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))
    best = None
    edges = np.roll(hull, -1, axis=0) - hull
    for ex, ey in edges:
        n = np.hypot(ex, ey)
        if n < 1e-9:
            continue
        u = np.array([ex, ey]) / n
        a = hull @ u
        b = hull @ np.array([-u[1], u[0]])
        w, h = float(np.ptp(a)), float(np.ptp(b))
        if best is None or w * h < best[0] * best[1]:
            best = (w, h)
    if best is None or best[0] * best[1] <= 0:
        return 0.0, 0.0, 0.0
    return max(best), min(best), area / (best[0] * best[1])


def _circle_centre(xy: np.ndarray) -> np.ndarray:
    """Least-squares circle through 2-D points (a rim seen in part still gives its centre)."""
    a = np.column_stack([2 * xy, np.ones(len(xy))])
    b = (xy**2).sum(axis=1)
    solution, *_ = np.linalg.lstsq(a, b, rcond=None)
    return solution[:2]


def _shape(long: float, short: float, fill: float, height: float) -> str:
    """The name of a solid from its top face's footprint and its height."""
    if short <= 0:
        return 'block'
    if fill < 0.87 and long / short < 1.3:
        return 'button' if height < 0.6 * long else 'cylinder'
    if long / short > 2.2:
        return 'bar'
    if long / short < 1.35 and 0.6 < height / short < 1.6:
        return 'cube'
    return 'block'


def measure(points: np.ndarray, table_z: float, hidden_top: str = '') -> Measured:
    """Shape and geometry of one object's world points (N x 3, at least a few dozen).

    `hidden_top` says why its top face cannot be seen whole: 'covered' (another object stands
    on it: the cameras see its front, so its depth is taken equal to its visible width) or
    'held' (a hand is over it: its centre is that of all its points' extent)."""
    p = voxel_means(points)
    z = p[:, 2]
    top = float(np.percentile(z, 99))
    lowest = float(np.percentile(z, 1))
    bottom = table_z if lowest - table_z < RESTING_M else lowest
    height = max(0.0, top - bottom)
    lo = np.percentile(p[:, :2], 1, axis=0)
    hi = np.percentile(p[:, :2], 99, axis=0)
    box_centre = (lo + hi) / 2
    surface = p[z >= top - TOP_BAND_M]
    if hidden_top == 'covered':
        width = float(hi[0] - lo[0])
        centre = np.array([box_centre[0], lo[1] + width / 2])
        shape = 'cube' if abs(width - height) < 0.25 * max(width, height) else 'block'
        size = np.array([width, width, height])
        return Measured(shape, np.array([*centre, (top + bottom) / 2]), size, top)
    radius = 0.25 * float(np.min(hi - lo)) / 2
    middle = z[np.linalg.norm(p[:, :2] - box_centre, axis=1) <= max(radius, 0.004)]
    if top - table_z < FLAT_M:  # resting, so its bottom is the table
        shape, centre = 'zone', p[:, :2].mean(axis=0)
    elif len(middle) >= 3 and float(np.median(middle)) < top - 0.4 * height:  # concave
        shape = 'bowl'
        centre = _circle_centre(surface[:, :2]) if len(surface) >= 8 else box_centre
        if np.linalg.norm(centre - box_centre) > 0.5 * float(np.max(hi - lo)):
            centre = box_centre  # a rim too small a part of a circle to fit
    else:
        shape, centre = _shape(*footprint(surface[:, :2]), height), surface[:, :2].mean(axis=0)
    if hidden_top == 'held' and shape != 'zone':
        centre = box_centre
    position = np.array([centre[0], centre[1], (top + bottom) / 2])
    size = np.array([hi[0] - lo[0], hi[1] - lo[1], height])
    return Measured(shape, position, size, top)


def measure_all(
    point_sets: list[np.ndarray], table_z: float | list[float], held: list[bool] | None = None
) -> list[Measured]:
    """`measure` of every object of a scene (one table height, or one per object), each told
    whether another stands on it (`covered`) or a hand holds it (`held`)."""
    tables = table_z if isinstance(table_z, list) else [table_z] * len(point_sets)
    held = held or [False] * len(point_sets)
    return [
        measure(p, z, 'covered' if under else 'held' if hand else '')
        for p, z, under, hand in zip(point_sets, tables, covered(point_sets), held, strict=True)
    ]


def covered(point_sets: list[np.ndarray], gap: float = RESTING_M) -> list[bool]:
    """Which objects have another standing on them: its lowest points within `gap` above their
    top, over their footprint."""
    tops = [float(np.percentile(p[:, 2], 99)) for p in point_sets]
    bottoms = [float(np.percentile(p[:, 2], 1)) for p in point_sets]
    lo = [np.percentile(p[:, :2], 5, axis=0) for p in point_sets]
    hi = [np.percentile(p[:, :2], 95, axis=0) for p in point_sets]
    out = []
    for a in range(len(point_sets)):
        out.append(
            any(
                b != a
                and -0.005 < bottoms[b] - tops[a] < gap
                and np.all(lo[b] < hi[a] + OVERLAP_M)
                and np.all(lo[a] < hi[b] + OVERLAP_M)
                for b in range(len(point_sets))
            )
        )
    return out
