"""The graph as an episode sees it: `EpisodeStation` (harness_bringup's EpisodeGraph implements
it over ROS; the operator's session and the tests use it too) and what a reset tells the
episode (`EpisodeStart`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
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

    def reset(self, task: str, layout: int, seed: int) -> EpisodeStart: ...

    def robot(self) -> RobotState: ...

    def cameras(
        self, names: list[str], depth: bool = False, segmentation: bool = False
    ) -> list[CameraView]: ...

    def start_kernel(self, workspace: Path, log: Path) -> None: ...

    def run_cell(self, code: str, timeout: float) -> CellResult: ...

    def wrap_up(self, timeout: float) -> CellResult: ...

    def policy_to_end(self, timeout: float) -> CellResult: ...

    def stop_kernel(self) -> None: ...

    def outcome(self) -> Outcome: ...

    def serve_verify(self, verify: Callable[[str], ClaimAnswer]) -> None: ...

    def stop_recording(self) -> dict:
        """After the `end` event: close the episode's recording; notes for the summary."""
        ...
