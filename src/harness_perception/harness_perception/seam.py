"""The perception seam: a backend turns camera views (and the measured robot) into detections;
`Perception` gives them ids and answers queries. Backends: `pixels` (RGB-D and calibration
only, the default), `oracle` (the simulator's segmentation, ground truth for tests), `service`
(an external detector over HTTP, see service.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from harness_types.camera import CameraView
from harness_types.robot_state import RobotState

from harness_perception.measure import SHAPE_WORDS, Measured


@dataclass(frozen=True)
class Detection:
    """One object a backend found: its colour name, its geometry and shape, the cameras that saw
    it, and `label` when the backend names objects itself (the oracle, a detector service)."""

    colour: str
    measured: Measured
    cameras: list[str]
    label: str = ''

    @property
    def name(self) -> str:
        """The label locate() reports: the backend's, or colour and shape ('red cube')."""
        return self.label or f'{self.colour} {self.measured.shape}'

    @property
    def words(self) -> set[str]:
        """Every word a query may use for this object."""
        words = set(self.name.lower().replace('_', ' ').split())
        if not self.label:
            words |= set(SHAPE_WORDS.get(self.measured.shape, ()))
        return words


class PerceptionBackend(Protocol):
    name: str
    needs_segmentation: bool  # whether views must carry the simulator's segmentation
    reads_query: bool  # whether detections depend on the query (else one pass serves all)

    def detect(
        self, views: list[CameraView], state: RobotState | None, query: str = ''
    ) -> list[Detection]: ...


@runtime_checkable
class SharesPasses(Protocol):
    """A backend whose passes other processes of the station may take (shared_passes.py):
    `fingerprint` names its configuration (two backends with the same one give the same
    detections for the same input and state); `pass_state()` is the state it keeps between
    passes, as JSON; `read_state` whether its last pass read that state (or left it as it
    found it); `adopt_state(state)` takes on the state another process's pass left, and raises
    ValueError, changing nothing, for a state that is not one of its own."""

    fingerprint: str
    read_state: bool

    def pass_state(self) -> dict: ...

    def adopt_state(self, state: dict) -> None: ...
