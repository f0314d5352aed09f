"""CameraView's geometry: lifting pixels to the world and projecting back."""

import numpy as np
from harness_types.camera import CameraView
from harness_types.transforms import quat_to_matrix


def view(rng: np.random.Generator) -> CameraView:
    h, w = 48, 64
    depth = rng.uniform(0.2, 3.0, (h, w)).astype(np.float32)
    depth[rng.random((h, w)) < 0.05] = np.inf  # no return
    depth[rng.random((h, w)) < 0.05] = 0.0  # too near
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
    rows, cols = np.nonzero(mask & np.isfinite(v.depth) & (v.depth > 0.01))
    z = v.depth[rows, cols].astype(float)
    local = np.stack([(cols - v.cx) / v.fx * z, (rows - v.cy) / v.fy * z, z], axis=1)
    assert np.allclose(points, v.position + local @ v.rotation.T, atol=1e-12)
    assert np.array_equal(colours, v.rgb[rows, cols])
    assert np.array_equal(v.back_project(mask), points)
    # ... and projecting the points back lands on their pixels
    assert np.allclose(v.project(points), np.stack([cols, rows], axis=1), atol=1e-6)
