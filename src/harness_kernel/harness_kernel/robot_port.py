"""What the kernel needs of the robot side (`RobotPort`: the skill server's interfaces, which the
kernel node implements over ROS) and of whoever waits on a skill (`Pump`)."""

from __future__ import annotations

import threading
from typing import Protocol

import numpy as np
from harness_types.camera import CameraView
from harness_types.execution import Execution
from harness_types.prediction import Prediction
from harness_types.robot_state import RobotState
from harness_types.scene import ClaimAnswer


class Pump(Protocol):
    """What the kernel does while a skill runs (its channel loop)."""

    def serve(self, wait_s: float) -> None:
        """Relay reactive steps, read output, watch the program and the cell's time; block at
        most `wait_s` seconds for one of them."""

    def wake(self) -> None:
        """End a blocked serve() now (thread-safe: the skill's done-callback calls it)."""


class Idle:
    """The pump of an execution the program takes no part in (the wrap-up, policy-to-end):
    nothing to relay; serve() waits for the skill's end."""

    def __init__(self) -> None:
        self._woken = threading.Event()

    def serve(self, wait_s: float) -> None:
        if self._woken.wait(wait_s):
            self._woken.clear()

    def wake(self) -> None:
        self._woken.set()


class RobotPort(Protocol):
    """What the kernel needs of the robot side (the skill server's interfaces)."""

    def execute(self, skill: str, args: dict, reactive: bool, pump: Pump) -> Execution: ...

    def state(self) -> RobotState: ...

    def views(
        self, cameras: list[str], depth: bool = True, segmentation: bool = True
    ) -> list[CameraView]: ...

    def reachable(self, arm: str, position, quat, collision_free: bool = False) -> bool: ...

    def verify(self, claim: str) -> ClaimAnswer: ...

    def predict(
        self,
        horizon_s: float,
        actions: np.ndarray | None = None,
        entry: dict | None = None,
        instruction: str = '',
        cameras: tuple[str, ...] = (),
    ) -> Prediction: ...
