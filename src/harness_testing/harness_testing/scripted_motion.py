"""Small joint-space helpers for driving the worker without skills (tests, benchmarks, bring-up).

`reach()` tries the steepest tool pitch (harness_types.transforms.tool_rotation) the arm can
reach first.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from harness_types.transforms import tool_rotation
from harness_worker.kinematics import ArmKinematics


def reach(kin: ArmKinematics, position: np.ndarray, seed: np.ndarray | None = None) -> np.ndarray:
    """Joints that put the TCP at `position`, pointing as steeply down as the arm allows."""
    for degrees in range(90, 25, -5):
        solved = kin.ik(np.asarray(position, float), tool_rotation(np.radians(degrees)), seed)
        if solved.ok:
            return solved.joints
    raise ValueError(f'{kin.arm} arm cannot reach {np.round(position, 3).tolist()} pointing down')


def joint_steps(start: np.ndarray, goal: np.ndarray, max_step: float = 0.08) -> list[np.ndarray]:
    """Evenly spaced joint targets from `start` (exclusive) to `goal`, at most `max_step` apart."""
    n = max(1, int(np.ceil(np.abs(goal - start).max() / max_step)))
    return [start + (goal - start) * (k / n) for k in range(1, n + 1)]


def move_arm(
    tick: Callable[[np.ndarray], object],
    measured: np.ndarray,
    arm: str,
    goal: np.ndarray,
    gripper: float,
    settle: int = 5,
    max_step: float = 0.08,
) -> np.ndarray:
    """Tick `arm` to `goal` with its gripper at `gripper`; returns the last command."""
    base = 0 if arm == 'left' else 7
    command = np.array(measured, dtype=float)
    targets = joint_steps(command[base : base + 6], np.asarray(goal, float), max_step)
    for target in targets + [targets[-1]] * settle:
        command[base : base + 6] = target
        command[base + 6] = gripper
        tick(command.copy())
    return command
