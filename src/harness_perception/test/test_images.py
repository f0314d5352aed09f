"""Outlines: a located object's box lands where the camera sees it. PNG: what is encoded is
what any reader decodes."""

import io

import numpy as np
import pytest
from harness_perception.images import outlined, png
from harness_types.camera import CameraView
from harness_types.scene import LocatedObject
from PIL import Image

# A camera 1 m above the origin looking straight down (optical z = world -z, x = world x).
CAMERA = CameraView(
    'cam',
    np.zeros((240, 320, 3), np.uint8),
    200.0,
    200.0,
    160.0,
    120.0,
    np.array([0.0, 0.0, 1.0]),
    np.diag([1.0, -1.0, -1.0]),
)


def test_project_is_the_pinhole_model():
    uv = CAMERA.project(np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.0, 2.0]]))
    assert np.allclose(uv[0], [160, 120]) and np.allclose(uv[1], [180, 120])
    assert np.isnan(uv[2]).all()  # behind the camera


def test_an_outline_is_drawn_around_the_object_only():
    obj = LocatedObject('obj1', 'cube', np.array([0.1, 0.0, 0.0]), np.ones(3) * 0.04, 0.02)
    image = outlined(CAMERA, [obj])
    drawn = np.argwhere(image.any(axis=2))
    assert len(drawn) > 0
    v0, u0 = drawn.min(axis=0)
    v1, u1 = drawn.max(axis=0)
    # the box spans u 176..184, v 115..124; the id is written above it
    assert u0 >= 175 and u1 <= 215 and v0 >= 100 and v1 <= 125
    assert image[115, 177:184].any(axis=1).all() and image[124, 177:184].any(axis=1).all()
    assert not image[120, 177:184].any()  # an outline, not a filled box
    assert png(image).startswith(b'\x89PNG')


@pytest.mark.parametrize(
    ('shape', 'mode'), [((37, 53), 'L'), ((37, 53, 3), 'RGB'), ((37, 53, 4), 'RGBA')]
)
def test_a_png_decodes_to_the_pixels_it_was_given(shape, mode):
    pixels = np.random.default_rng(3).integers(0, 256, shape, dtype=np.uint8)
    pixels[:10] = 7  # flat rows, as a rendered view has, beside noise
    decoded = Image.open(io.BytesIO(png(pixels)))
    decoded.load()  # reads every chunk: a bad CRC or a short IDAT raises here
    assert decoded.mode == mode and decoded.size == (shape[1], shape[0])
    assert np.array_equal(np.asarray(decoded), pixels)


def test_a_png_of_other_numbers_is_cast_to_bytes_and_a_non_image_is_refused():
    ramp = np.arange(12, dtype=np.float64).reshape(2, 2, 3) * 20.0
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(png(ramp)))), ramp.astype(np.uint8))
    for bad in (np.zeros(5), np.zeros((4, 4, 2)), np.zeros((0, 4, 3)), np.zeros((2, 2, 3, 1))):
        with pytest.raises(ValueError, match='a PNG needs'):
            png(bad)
