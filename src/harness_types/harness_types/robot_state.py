"""The measured robot: one ArmState per arm, one RobotState per tick. Every layer reads these:
the worker produces them, the shield's caller, the execution engine, guards and controllers
(as `obs`), programs (`state()`) and the driver's turn report."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

ARMS = ('left', 'right')
CONTACT_FORCE_N = 0.5  # a finger force above this counts as contact


def _zeros(n: int):
    return field(default_factory=lambda: np.zeros(n))


@dataclass(frozen=True)
class ArmState:
    """One arm, measured. Positions are in the world frame (m), quaternions (w, x, y, z).

    `tcp` is `tcp_position`; `gripper` the open fraction (1 = open, 88 mm); `grip_force` the
    normal force (N) on the fingers from anything but the arm itself; `contact_force` how hard
    (N, normal) the arm presses on the table and on objects it does not hold (0 where the arm
    cannot sense it); `fingers` the two finger joints (m)."""

    name: str
    joints: np.ndarray  # 6, rad
    gripper: float
    tcp_position: np.ndarray
    tcp_quat: np.ndarray
    link6_position: np.ndarray
    link6_quat: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    velocities: np.ndarray = _zeros(6)
    grip_force: float = 0.0
    fingers: tuple[float, float] = (0.0, 0.0)
    contact_force: float = 0.0

    @property
    def tcp(self) -> np.ndarray:
        return self.tcp_position


@dataclass(frozen=True)
class RobotState:
    """Both arms at one tick: `left`, `right` (ArmState), `arms` (by name), `step` (ticks since
    reset), `time` (s of episode time), `images` (camera name -> CameraView, when asked for)."""

    left: ArmState
    right: ArmState
    step: int
    time: float
    images: dict = field(default_factory=dict)

    @property
    def arms(self) -> dict[str, ArmState]:
        return {'left': self.left, 'right': self.right}

    def arm(self, name: str) -> ArmState:
        if name not in ARMS:
            raise ValueError(f"arm must be 'left' or 'right', got {name!r}")
        return self.left if name == 'left' else self.right

    @property
    def measured(self) -> np.ndarray:
        """The 14-number measured vector in the command layout."""
        return np.concatenate(
            [self.left.joints, [self.left.gripper], self.right.joints, [self.right.gripper]]
        ).astype(float)

    def with_images(self, images: dict) -> RobotState:
        return RobotState(self.left, self.right, self.step, self.time, dict(images))

    def signals(self) -> dict[str, float]:
        """Named numeric signals: `<arm>_joint1..6`, `<arm>_tcp_x|y|z`, `<arm>_link6_x|y|z`,
        `<arm>_gripper` (open fraction), `<arm>_grip_force` (N), `<arm>_contact` (0 or 1),
        `time`, `step`."""
        out: dict[str, float] = {'time': float(self.time), 'step': float(self.step)}
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


def signal_names() -> list[str]:
    """Every signal name `RobotState.signals()` has."""
    names = ['time', 'step']
    for arm in ARMS:
        names += [f'{arm}_joint{i}' for i in range(1, 7)]
        names += [f'{arm}_tcp_{a}' for a in 'xyz'] + [f'{arm}_link6_{a}' for a in 'xyz']
        names += [f'{arm}_gripper', f'{arm}_grip_force', f'{arm}_contact']
    return names


def arm_slice(arm: str) -> slice:
    """Where an arm's six joints sit in the 14-number command."""
    base = 0 if arm == 'left' else 7
    return slice(base, base + 6)


def gripper_index(arm: str) -> int:
    """Where an arm's gripper open fraction sits in the 14-number command."""
    return 6 if arm == 'left' else 13
