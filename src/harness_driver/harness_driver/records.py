"""What the driver reads from the graph, as plain records (the episode core imports no ROS)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class ArmReading:
    name: str
    joints: list[float]
    gripper: float  # open fraction
    tcp: list[float]  # x, y, z (m, world)
    grip_force: float  # N


@dataclass(frozen=True)
class RobotReading:
    left: ArmReading
    right: ArmReading
    step: int
    sim_time: float


@dataclass(frozen=True)
class ObjectReading:
    id: str
    label: str
    position: list[float]
    size: list[float]


@dataclass(frozen=True)
class ExecutionSummary:
    skill: str
    arm: str
    event: str
    detail: str
    ticks: int


@dataclass
class CellReport:
    """A cell's result and the turn report measured after it."""

    status: str  # ok | escalated | episode_ended | finished | error
    output: str = ''
    traceback: str = ''
    summary: str = ''
    event: str = ''
    event_detail: str = ''
    event_skill: str = ''
    executions: list[ExecutionSummary] = field(default_factory=list)
    images: list[tuple[str, np.ndarray]] = field(default_factory=list)  # shown: caption, RGB
    restored: list[str] = field(default_factory=list)
    events_handled: int = 0
    objects: list[ObjectReading] = field(default_factory=list)
    holds: dict[str, str] = field(default_factory=dict)  # arm -> object id ('' = nothing)
    measured: bool = False


@dataclass(frozen=True)
class CameraImage:
    """An RGB view with the calibration to project world points into it (optical frame:
    z forward, x right, y down)."""

    name: str
    rgb: np.ndarray
    fx: float
    fy: float
    cx: float
    cy: float
    position: np.ndarray
    rotation: np.ndarray


@dataclass(frozen=True)
class EpisodeStart:
    instruction: str
    description: str


@dataclass(frozen=True)
class VerdictReading:
    answered: bool
    yes: bool
    sentence: str
