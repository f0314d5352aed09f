"""CameraView's geometry: lifting pixels to the world and projecting back."""

import numpy as np
import pytest
from harness_types.camera import CameraView
from harness_types.transforms import quat_to_matrix


def view(rng: np.random.Generator) -> CameraView:
    h, w = 48, 64
    depth = rng.uniform(0.2, 3.0, (h, w)).astype(np.float32)
    depth[rng.random((h, w)) < 0.05] = np.inf  # no return
    depth[rng.random((h, w)) < 0.05] = 0.0  # too near
    depth[rng.random((h, w)) < 0.05] = np.nan  # no reading
    quat = rng.normal(size=4)
    return CameraView(
        'cam',
        rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
        fx=50.0,
        fy=52.0,
        cx=31.5,
        cy=23.5,
        position=rng.normal(size=3),
        rotation=quat_to_matrix(quat / np.linalg.norm(quat)),
        depth=depth,
    )


def test_lift_gives_each_valid_masked_pixel_its_world_point_and_colour_in_row_order():
    rng = np.random.default_rng(5)
    v = view(rng)
    mask = v.depth < 2.5
    points, colours = v.lift(mask)
    # the formula as it was written before the flat indices: the same numbers to the bit
    rows, cols = np.nonzero(mask)
    z = v.depth[rows, cols]
    ok = np.isfinite(z) & (z > 0.01)
    rows, cols, z = rows[ok], cols[ok], z[ok]
    local = np.stack([(cols - v.cx) / v.fx * z, (rows - v.cy) / v.fy * z, z], axis=1)
    assert np.array_equal(points, v.position + local @ v.rotation.T)
    assert np.array_equal(colours, v.rgb[rows, cols])
    assert np.array_equal(v.back_project(mask), points)
    # ... and projecting the points back lands on their pixels
    assert np.allclose(v.project(points), np.stack([cols, rows], axis=1), atol=1e-6)


def test_a_mask_selects_where_it_is_nonzero_and_must_match_the_image():
    rng = np.random.default_rng(6)
    v = view(rng)
    mask = (rng.random(v.depth.shape) < 0.5).astype(np.uint8) * 2  # 0 or 2, as np.nonzero reads
    assert np.array_equal(v.back_project(mask), v.back_project(mask.astype(bool)))
    assert len(v.back_project(np.zeros(v.depth.shape, bool))) == 0
    with pytest.raises(ValueError, match=r'the mask of camera view cam is \(64,\), its images'):
        v.back_project(np.ones(v.depth.shape[1], bool))


def test_lift_with_keep_gives_what_lift_then_a_filter_gives():
    rng = np.random.default_rng(7)
    v = view(rng)
    mask = v.depth < 2.5
    points, colours = v.lift(mask)
    kept = points[:, 2] > float(np.median(points[:, 2]))
    p, c = v.lift(mask, lambda world: world[:, 2] > float(np.median(points[:, 2])))
    assert np.array_equal(p, points[kept]) and np.array_equal(c, colours[kept])
    assert len(p) < len(points)
