"""What an execution needs from the robot side, as protocols (the skill server implements
them over ROS; tests may implement them in-process)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
from harness_reactive.stage import ReactiveResult
from harness_types.camera import CameraView
from harness_types.robot_state import RobotState


@dataclass(frozen=True)
class TickOutcome:
    accepted: bool
    reasons: list[str]
    observation: RobotState
    episode_ended: bool


@dataclass(frozen=True)
class Solved:
    ok: bool
    joints: np.ndarray
    reason: str = ''


@dataclass(frozen=True)
class Path:
    ok: bool
    waypoints: list[np.ndarray]
    reason: str = ''


class StationPort(Protocol):
    """The worker's services as the execution engine calls them."""

    def tick(self, command: np.ndarray) -> TickOutcome: ...

    def observe_state(self) -> RobotState: ...

    def ik(
        self, arm: str, position: np.ndarray, quat: np.ndarray | None, seed: np.ndarray | None
    ) -> Solved: ...

    def tcp_of(self, arm: str, joints: np.ndarray) -> np.ndarray: ...

    def plan(self, arm: str, goal: np.ndarray) -> Path: ...

    def views(self, cameras: tuple[str, ...], depth: bool) -> list[CameraView]: ...


class ReactivePort(Protocol):
    """The program's reactive stage (the kernel's `reactive_step`)."""

    def step(
        self, execution_id: str, skill: str, obs: RobotState, call_controller: bool
    ) -> ReactiveResult: ...
