"""Images for the model: PNG encoding and camera views with located objects outlined."""

from __future__ import annotations

import io
from collections.abc import Iterable

import numpy as np
from harness_types.camera import CameraView
from harness_types.scene import LocatedObject
from PIL import Image, ImageDraw

OUTLINE = (255, 230, 0)


def png(rgb: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8)).save(buffer, format='PNG')
    return buffer.getvalue()


def outlined(camera: CameraView, objects: Iterable[LocatedObject]) -> np.ndarray:
    """The camera's RGB with each object's projected bounding box and its id drawn on it."""
    image = Image.fromarray(np.ascontiguousarray(camera.rgb, dtype=np.uint8))
    draw = ImageDraw.Draw(image)
    h, w = camera.rgb.shape[:2]
    corners = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])
    for obj in objects:
        uv = camera.project(np.asarray(obj.position) + corners * np.asarray(obj.size))
        if np.isnan(uv).any():
            continue
        (u0, v0), (u1, v1) = uv.min(axis=0), uv.max(axis=0)
        if u1 < 0 or v1 < 0 or u0 >= w or v0 >= h:
            continue
        draw.rectangle([u0, v0, u1, v1], outline=OUTLINE, width=1)
        draw.text((max(u0, 0), max(v0 - 11, 0)), obj.id, fill=OUTLINE)
    return np.asarray(image)
