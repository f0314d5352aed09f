"""What reactive code sees each tick: the measured arms, named numeric signals, camera images."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

ARMS = ('left', 'right')
CONTACT_FORCE_N = 0.5  # a finger force above this counts as contact


@dataclass(frozen=True)
class ArmObservation:
    joints: np.ndarray  # 6, rad
    gripper: float  # measured open fraction
    tcp_position: np.ndarray  # world, m
    tcp_quat: np.ndarray  # w, x, y, z
    link6_position: np.ndarray
    grip_force: float = 0.0  # N on the fingers


@dataclass(frozen=True)
class Observation:
    """One tick as the guards, watches, `until` predicates and controllers see it."""

    step: int
    time: float
    arms: dict[str, ArmObservation]
    images: dict[str, object] = field(default_factory=dict)  # camera name -> CameraImage-like

    @property
    def measured(self) -> np.ndarray:
        """The 14-number measured vector in the command layout."""
        out: list[float] = []
        for arm in ARMS:
            a = self.arms[arm]
            out += [*a.joints, a.gripper]
        return np.array(out)

    def signals(self) -> dict[str, float]:
        """Named numeric signals: `<arm>_joint1..6`, `<arm>_tcp_x|y|z`, `<arm>_link6_x|y|z`,
        `<arm>_gripper` (open fraction), `<arm>_grip_force` (N), `<arm>_contact` (0 or 1)."""
        out: dict[str, float] = {'time': self.time, 'step': float(self.step)}
        for arm, a in self.arms.items():
            for i, q in enumerate(a.joints, start=1):
                out[f'{arm}_joint{i}'] = float(q)
            for axis, v in zip('xyz', a.tcp_position, strict=True):
                out[f'{arm}_tcp_{axis}'] = float(v)
            for axis, v in zip('xyz', a.link6_position, strict=True):
                out[f'{arm}_link6_{axis}'] = float(v)
            out[f'{arm}_gripper'] = float(a.gripper)
            out[f'{arm}_grip_force'] = float(a.grip_force)
            out[f'{arm}_contact'] = 1.0 if a.grip_force > CONTACT_FORCE_N else 0.0
        return out
