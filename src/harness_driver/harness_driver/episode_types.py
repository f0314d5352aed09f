"""What an episode takes and gives: the graph as it sees it (`EpisodeStation`: harness_bringup's
EpisodeGraph implements it over ROS; the operator's session and the tests use it too), what a
reset tells it (`EpisodeStart`), what to run (`EpisodeSpec`), its prompts and its result."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harness_bench.task import Outcome
from harness_types.camera import CameraView
from harness_types.cell import CellResult
from harness_types.robot_state import RobotState
from harness_types.scene import ClaimAnswer


@dataclass(frozen=True)
class EpisodeStart:
    instruction: str
    description: str
    pictures: tuple[str, ...] = ()  # cameras that serve the task's pictures (harness_bench PICTURE)


class EpisodeStation(Protocol):
    """The graph as the episode sees it (harness_bringup's EpisodeGraph over ROS)."""

    def reset(
        self, task: str, layout: int, seed: int, randomize: tuple[str, ...] = ()
    ) -> EpisodeStart: ...

    def robot(self) -> RobotState: ...

    def cameras(
        self, names: list[str], depth: bool = False, segmentation: bool = False
    ) -> list[CameraView]: ...

    def start_kernel(self, workspace: Path, log: Path) -> None: ...

    def run_cell(self, code: str, timeout: float, max_calls: int = 0) -> CellResult: ...

    def wrap_up(self, timeout: float) -> CellResult: ...

    def policy_to_end(self, timeout: float) -> CellResult: ...

    def stop_kernel(self) -> None: ...

    def outcome(self, end: bool = False) -> Outcome:
        """The task's verdict; `end`: the episode's last read, which releases its token."""
        ...

    def serve_verify(self, verify: Callable[[str], ClaimAnswer]) -> None: ...

    def stop_recording(self) -> dict:
        """After the `end` event: close the episode's recording; notes for the summary."""
        ...


@dataclass(frozen=True)
class EpisodeSpec:
    task: str
    layout: int
    seed: int
    step_limit: int
    randomize: tuple[str, ...] = ()  # scene randomisation axes (harness_bench.randomization)


@dataclass
class Prompts:
    system: str
    verifier: str


@dataclass
class EpisodeResult:
    summary: dict
    setup_error: bool = False  # the model could not be reached or refused the key


@dataclass
class Phases:
    """Where an episode's wall time went, by phase (the summary's phases_seconds)."""

    seconds: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(
            (
                'graph_start',
                'start_up',
                'model',
                'cells',
                'verify',
                'policy_to_end',
                'wrap_up',
                # after each cell: the robot's state and fresh views for the next request
                'turn_report',
                'outcome',
                # the goal judged at the end, the trial and end events, the bag closed
                'closing',
            ),
            0.0,
        )
    )

    # The steps of the two phases an episode spends once (the summary's phase_parts_seconds):
    # what a bench's fixed cost per episode is made of.
    parts: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, name: str, since: float) -> None:
        self.seconds[name] += time.monotonic() - since

    def part(self, phase: str, name: str, since: float) -> float:
        """Count the seconds since `since` as `phase`'s step `name`; returns now, the next
        step's `since`. (The phase itself is counted by `add`, around its steps.)"""
        now = time.monotonic()
        steps = self.parts.setdefault(phase, {})
        steps[name] = steps.get(name, 0.0) + now - since
        return now
