"""Plain records the worker core returns (the node maps them onto harness_msgs)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ArmRecord:
    name: str
    joints: np.ndarray  # 6
    velocities: np.ndarray  # 6
    gripper: float  # measured open fraction
    link6_position: np.ndarray
    link6_quat: np.ndarray  # w, x, y, z
    tcp_position: np.ndarray
    tcp_quat: np.ndarray
    grip_force: float = 0.0  # N on the fingers from anything but the arm itself


@dataclass(frozen=True)
class StateRecord:
    left: ArmRecord
    right: ArmRecord
    step: int
    sim_time: float
    finger_positions: dict[str, float] = field(default_factory=dict)  # URDF joint -> q (m)

    def arm(self, name: str) -> ArmRecord:
        return self.left if name == 'left' else self.right


@dataclass(frozen=True)
class CameraImage:
    """One camera's view. Pose is the optical frame (z forward, x right, y down) in the world."""

    name: str
    rgb: np.ndarray  # H x W x 3 uint8
    depth: np.ndarray | None  # H x W float32, metres along the optical axis
    segmentation: np.ndarray | None  # H x W int32: index into `labels`, -1 for background/robot
    labels: list[str]  # object labels (e.g. "red cube") by segmentation index
    fx: float
    fy: float
    cx: float
    cy: float
    position: np.ndarray
    quat: np.ndarray  # w, x, y, z of the optical frame
