"""What the expert sees: the project's pixel perception run on the observation's images.

Only what a policy is sent goes in: the colour and depth images with their calibration, and the
measured joints (perception removes the robot's own links, fingers included, from the views).
Views it cannot see with (too many or too large images, calibration that cannot be a camera's)
are refused with LocateError before perception runs.
"""

from __future__ import annotations

import numpy as np
from arx_x5_description.embodiment import Embodiment
from harness_policy.observation import cameras_of, image_key, views_of
from harness_types.camera import CameraView
from harness_types.scene import LocatedObject
from harness_worker.kinematics import StationKinematics

from harness_expert.observed import robot_state
from harness_perception import make_perception

# Beyond these, perception's time per look grows past what a control loop waits for (the
# station sends three cameras, the largest 640 x 480).
MAX_CAMERAS = 6
MAX_IMAGE_SIDE = 1280  # pixels, either side
ORTHONORMAL_TOL = 1e-3


class LocateError(RuntimeError):
    """The observation lacks what the expert needs to see (images with depth and a calibration
    that makes sense, within the sizes it handles); the message says what."""


def check_views(obs: dict) -> None:
    """LocateError unless the observation's images are few and small enough; looked at before
    the images are converted (views_of), so that an oversized one costs nothing."""
    cameras = cameras_of(obs)
    if len(cameras) > MAX_CAMERAS:
        raise LocateError(
            f'I see with at most {MAX_CAMERAS} cameras; the observation has {len(cameras)}'
        )
    for camera in cameras:
        shape = np.shape(obs[image_key(camera)])
        if len(shape) >= 2 and max(shape[:2]) > MAX_IMAGE_SIDE:
            raise LocateError(
                f'I see images of at most {MAX_IMAGE_SIDE} x {MAX_IMAGE_SIDE} pixels; '
                f'{camera} is {shape[1]} x {shape[0]}'
            )


def check_calibration(view: CameraView) -> None:
    """LocateError unless the view's focal lengths are positive and its rotation is one
    (orthonormal, right-handed): perception would place every point wrongly otherwise."""
    if not (np.isfinite([view.fx, view.fy]).all() and view.fx > 0 and view.fy > 0):
        raise LocateError(
            f'the calibration of {view.name} makes no sense: focal lengths fx={view.fx}, '
            f'fy={view.fy} (they must be positive)'
        )
    r = np.asarray(view.rotation, dtype=float)
    off = float(np.abs(r.T @ r - np.eye(3)).max())
    if off > ORTHONORMAL_TOL or abs(float(np.linalg.det(r)) - 1.0) > ORTHONORMAL_TOL:
        raise LocateError(
            f'the calibration of {view.name} makes no sense: its extrinsics rotation is not a '
            f'rotation (R^T R is {off:.1e} off the identity, det {np.linalg.det(r):.3f})'
        )


class Locator:
    """`locate(obs, query)` over one episode: an object keeps its id from look to look."""

    def __init__(self, emb: Embodiment, urdf: str, kinematics: StationKinematics) -> None:
        self.emb = emb
        self.kinematics = kinematics
        self.perception = make_perception('pixels', emb, urdf)

    def locate(self, obs: dict, query: str = '') -> list[LocatedObject]:
        """Every object the observation's cameras show that matches `query` ('' for all)."""
        check_views(obs)
        views = views_of(obs)
        lacking = [v.name for v in views if v.depth is None]
        if not views or lacking:
            what = f'no depth of {", ".join(lacking)}' if views else 'no images'
            raise LocateError(f'I need colour and depth images to see; the observation has {what}')
        for view in views:
            check_calibration(view)
        state = robot_state(obs, self.kinematics, self.emb)
        return self.perception.locate(views, state, query)
