"""What the expert sees: the project's pixel perception run on the observation's images.

Only what a policy is sent goes in: the colour and depth images with their calibration, and the
measured joints (perception removes the robot's own links, fingers included, from the views).
"""

from __future__ import annotations

from arx_x5_description.embodiment import Embodiment
from harness_kernel.perception import make_perception
from harness_policy.observation import views_of
from harness_types.scene import LocatedObject
from harness_worker.kinematics import StationKinematics

from harness_expert.actuation import robot_state


class LocateError(RuntimeError):
    """The observation lacks what the expert needs to see (images with depth)."""


class Locator:
    """`locate(obs, query)` over one episode: an object keeps its id from look to look."""

    def __init__(self, emb: Embodiment, urdf: str, kinematics: StationKinematics) -> None:
        self.emb = emb
        self.kinematics = kinematics
        self.perception = make_perception('pixels', emb, urdf)

    def locate(self, obs: dict, query: str = '') -> list[LocatedObject]:
        """Every object the observation's cameras show that matches `query` ('' for all)."""
        views = views_of(obs)
        lacking = [v.name for v in views if v.depth is None]
        if not views or lacking:
            what = f'no depth of {", ".join(lacking)}' if views else 'no images'
            raise LocateError(f'I need colour and depth images to see; the observation has {what}')
        state = robot_state(obs, self.kinematics, self.emb)
        return self.perception.locate(views, state, query)
