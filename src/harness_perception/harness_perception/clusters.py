"""Connected components of 3-D points on a voxel grid (26-neighbourhood), in numpy."""

from __future__ import annotations

import itertools

import numpy as np

_OFFSETS = np.array(
    [o for o in itertools.product((-1, 0, 1), repeat=3) if o > (0, 0, 0)], dtype=np.int64
)
PACK_SPAN = 1 << 20  # voxel coordinates are packed into one int64 (plenty for a table at mm voxels)


def components(points: np.ndarray, voxel: float) -> np.ndarray:
    """A component label per point (0..K-1): points whose voxels touch share a label."""
    if len(points) == 0:
        return np.zeros(0, dtype=np.int64)
    keys = np.floor(points / voxel).astype(np.int64)
    keys -= keys.min(axis=0) - 1
    codes = (keys[:, 0] * PACK_SPAN + keys[:, 1]) * PACK_SPAN + keys[:, 2]
    voxels, of_point = np.unique(codes, return_inverse=True)
    grid = np.stack(
        [voxels // (PACK_SPAN * PACK_SPAN), voxels // PACK_SPAN % PACK_SPAN, voxels % PACK_SPAN],
        axis=1,
    )
    a_list, b_list = [], []
    for offset in _OFFSETS:
        n = grid + offset
        neighbour = (n[:, 0] * PACK_SPAN + n[:, 1]) * PACK_SPAN + n[:, 2]
        at = np.searchsorted(voxels, neighbour)
        at = np.minimum(at, len(voxels) - 1)
        hit = voxels[at] == neighbour
        a_list.append(np.nonzero(hit)[0])
        b_list.append(at[hit])
    a, b = np.concatenate(a_list), np.concatenate(b_list)
    label = np.arange(len(voxels))
    while True:  # min-label propagation with pointer jumping: a few rounds for compact objects
        before = label.copy()
        low = np.minimum(label[a], label[b])
        np.minimum.at(label, a, low)
        np.minimum.at(label, b, low)
        label = label[label]
        if np.array_equal(label, before):
            break
    _, dense = np.unique(label, return_inverse=True)
    return dense.ravel()[of_point.ravel()]
