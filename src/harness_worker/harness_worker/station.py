"""The worker backend seam: what a station (simulated or real) must do for the worker.

A backend is a plugin (harness_types.plugins): one module, `harness_worker.backends.<name>`
(or any importable module named by its dotted path in the worker's `backend` parameter), with a
function
`make_station(emb, urdf, node) -> Station` (`node` is the worker's ROS node, for a backend that
talks to ROS; None when the worker runs without ROS). The worker core talks to nothing else:
the shield runs in front of `apply`; the node publishes what `state` and `render` return.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Protocol

import numpy as np
from arx_x5_description.embodiment import Embodiment
from harness_bench.randomization import NO_VARIATION, SceneVariation
from harness_bench.task import ObjectSpec, WorldSnapshot
from harness_shield.shield import Contacts
from harness_types.camera import CameraView
from harness_types.plugins import PluginError, builtin_plugins, load_plugin, plugin_module
from harness_types.robot_state import RobotState


class Station(Protocol):
    """One station: the robot, its cameras and (in simulation) a task's objects."""

    backend: str  # the backend's name, reported by the worker's profile
    # False when the world is not the worker's (hardware, Gazebo): no task objects, no success
    # checks, and the robot's state topics (/joint_states, /tf, /clock) are published by the
    # robot's own drivers, not the worker.
    simulated: bool

    def load(self, objects: list[ObjectSpec], variation: SceneVariation = NO_VARIATION) -> None:
        """Start an episode with these objects and this scene variation (hardware: check the
        arms are home; objects and the scene are the real world's business, and the worker
        refuses a variation for a station that is not simulated)."""

    def apply(self, command: np.ndarray) -> None:
        """One control tick toward a shield-accepted 14-number command."""

    def measured(self) -> np.ndarray:
        """The measured state in the command layout (14 numbers)."""

    def state(self, step: int) -> RobotState:
        """Both arms measured now, stamped with the episode's `step`."""

    @property
    def time(self) -> float:
        """Seconds of episode time (simulated, or since reset on hardware)."""

    def render(self, camera: str, depth: bool = True, segmentation: bool = True) -> CameraView:
        """One camera's view now (ValueError for an unknown camera)."""

    def render_later(self, cameras: list[str]) -> Future[list[CameraView]]:
        """The RGB views of `cameras` as the world is now, delivered by the future while the
        caller goes on ticking (simulation only: the node publishes the camera topics of a
        world it owns from them). A backend may render at once and return a done future."""

    def snapshot(self, step: int) -> WorldSnapshot:
        """What a task's success check reads (simulation only)."""

    def contacts(self, command: np.ndarray) -> Contacts:
        """How deep the arms would be in the table and in each other at a 14-number command
        (the shield's collision checks)."""

    def arm_collides(self, arm: str, joints: np.ndarray) -> bool:
        """Would `arm` at `joints` (the rest as now) touch the table, an object or the other arm?"""

    def close(self) -> None:
        """Free what the station holds (renderers, connections)."""


class RobotNotAnswering(RuntimeError):  # noqa: N818 (the words a user reads)
    """A backend's robot did not answer in time (no joint state, clock or image); the message
    says what was missing. The worker refuses the request with it."""


BACKENDS = 'harness_worker.backends'  # the folder of the built-in backends
FACTORY = 'make_station'  # what a backend's module defines (see make_station)


def backend_module(backend: str) -> str:
    """The module of the backend named `backend` (worker.backend)."""
    return plugin_module(BACKENDS, backend)


def make_station(backend: str, emb: Embodiment, urdf: str, node=None) -> Station:
    """The station of the backend named `backend` (a plugin: harness_types.plugins), whose
    module defines `make_station(emb, urdf, node)`; PluginError when there is none."""
    factory = load_plugin('worker backend', BACKENDS, backend, FACTORY)
    if not callable(factory):
        raise PluginError(f'worker backend {backend!r}: make_station is not a function')
    return factory(emb, urdf, node)


def builtin_backends() -> list[str]:
    return builtin_plugins(BACKENDS)
