"""Images for the model: PNG encoding and camera views with located objects outlined."""

from __future__ import annotations

import io
from collections.abc import Iterable

import numpy as np
from PIL import Image, ImageDraw

from harness_driver.records import CameraImage, ObjectReading

OUTLINE = (255, 230, 0)


def png(rgb: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8)).save(buffer, format='PNG')
    return buffer.getvalue()


def project(camera: CameraImage, points: np.ndarray) -> np.ndarray:
    """Pixel (u, v) of world points (N x 3); NaN for points behind the camera."""
    local = (np.asarray(points, float) - camera.position) @ camera.rotation
    z = local[:, 2]
    with np.errstate(divide='ignore', invalid='ignore'):
        u = camera.fx * local[:, 0] / z + camera.cx
        v = camera.fy * local[:, 1] / z + camera.cy
    uv = np.stack([u, v], axis=1)
    uv[z <= 0.01] = np.nan
    return uv


def outlined(camera: CameraImage, objects: Iterable[ObjectReading]) -> np.ndarray:
    """The camera's RGB with each object's projected bounding box and its id drawn on it."""
    image = Image.fromarray(np.ascontiguousarray(camera.rgb, dtype=np.uint8))
    draw = ImageDraw.Draw(image)
    h, w = camera.rgb.shape[:2]
    corners = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])
    for obj in objects:
        uv = project(camera, np.asarray(obj.position) + corners * np.asarray(obj.size))
        if np.isnan(uv).any():
            continue
        (u0, v0), (u1, v1) = uv.min(axis=0), uv.max(axis=0)
        if u1 < 0 or v1 < 0 or u0 >= w or v0 >= h:
            continue
        draw.rectangle([u0, v0, u1, v1], outline=OUTLINE, width=1)
        draw.text((max(u0, 0), max(v0 - 11, 0)), obj.id, fill=OUTLINE)
    return np.asarray(image)
