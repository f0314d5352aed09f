"""Scenes staged by hand in the embedded simulator, for measurements and tests that need a
state no reset gives: an arm moved somewhere, an object held in a gripper, objects stacked or
put into another. It drives a `Worker` in process (every command through the shield) and, to
stack, moves objects directly in the simulator; it is never part of an episode."""

from __future__ import annotations

import mujoco
import numpy as np
from harness_bench.task import ObjectSpec
from harness_types.transforms import GRASP_PITCHES_DEG, quat_to_matrix, tool_rotation
from harness_worker.worker import Worker

MAX_STEP_RAD = 0.08  # per tick, well inside the shield's jump limit


def true_centre(station, spec: ObjectSpec) -> np.ndarray:
    """The centre of an object's bounding box, from the simulator (a bowl's origin is its
    bottom)."""
    pos, quat = station.object_pose(spec.name)
    if spec.shape == 'bowl':
        return pos + quat_to_matrix(quat) @ np.array([0.0, 0.0, spec.size[1] / 2])
    return pos


def _arm_slices(arm: str) -> tuple[slice, int]:
    return (slice(0, 6), 6) if arm == 'left' else (slice(7, 13), 13)


def settle(worker: Worker, ticks: int) -> None:
    """Hold the current command for some ticks."""
    command = worker.measured().copy()
    for _ in range(ticks):
        worker.tick(command)


def move_joints(worker: Worker, arm: str, joints: np.ndarray, gripper: float) -> None:
    """Joint-interpolated motion of one arm, then a short hold."""
    joint_slice, grip = _arm_slices(arm)
    command = worker.measured().copy()
    start = command[joint_slice].copy()
    steps = max(1, int(np.ceil(np.max(np.abs(joints - start)) / MAX_STEP_RAD)))
    for k in range(1, steps + 1):
        command[joint_slice] = start + (joints - start) * k / steps
        command[grip] = gripper
        worker.tick(command)
    for _ in range(10):
        worker.tick(command)


def tool_down(worker: Worker, arm: str, points) -> np.ndarray | None:
    """The steepest tool pitch whose rotation reaches every point, or None."""
    for pitch in GRASP_PITCHES_DEG:
        rotation = tool_rotation(np.radians(pitch))
        if all(worker.ik(arm, np.asarray(p, float), rotation).ok for p in points):
            return rotation
    return None


def move_arm_to(worker: Worker, arm: str, position, gripper: float = 1.0, rotation=None) -> bool:
    """Move an arm's TCP to `position` (the tool as steep as reachable, or `rotation`); False
    when IK finds no way."""
    rotation = rotation if rotation is not None else tool_down(worker, arm, [position])
    if rotation is None:
        return False
    result = worker.ik(arm, np.asarray(position, float), rotation)
    if not result.ok:
        return False
    move_joints(worker, arm, np.asarray(result.joints), gripper)
    return True


def hold_object(worker: Worker, name: str, lift: float = 0.15) -> bool:
    """Grasp an object from above with the nearer arm (a little below its centre) and lift
    it `lift` m; True when the gripper holds it."""
    pos, _ = worker.station.object_pose(name)
    arm = 'left' if pos[0] < 0 else 'right'
    grasp = pos - [0.0, 0.0, 0.008]
    path = [(grasp + [0.0, 0.0, dz], g) for dz, g in ((0.1, 1.0), (0, 1.0), (0, 0.0), (lift, 0.0))]
    rotation = tool_down(worker, arm, [p for p, _ in path])
    if rotation is None:
        return False
    for point, gripper in path:
        if not move_arm_to(worker, arm, point, gripper, rotation):
            return False
        if gripper == 0.0:
            settle(worker, 5)
    return bool(worker.station.holding(arm))


def put(worker: Worker, name: str, position, settle_ticks: int = 25) -> None:
    """Move an object (its origin) to `position`, upright and at rest, and let it settle."""
    station = worker.station
    joint = station.model.body(name).jntadr[0]
    qpos, dof = station.model.jnt_qposadr[joint], station.model.jnt_dofadr[joint]
    station.data.qpos[qpos : qpos + 7] = [*position, 1.0, 0.0, 0.0, 0.0]
    station.data.qvel[dof : dof + 6] = 0.0
    mujoco.mj_forward(station.model, station.data)
    settle(worker, settle_ticks)


def stack_boxes(worker: Worker) -> None:
    """Each box of the scene on top of the previous one, in the task's order."""
    boxes = [s for s in worker.station.objects if s.shape == 'box']
    base, _ = worker.station.object_pose(boxes[0].name)
    z = base[2] + boxes[0].size[2]
    for spec in boxes[1:]:
        put(worker, spec.name, [base[0], base[1], z + spec.size[2]], settle_ticks=0)
        z += 2 * spec.size[2]
    settle(worker, 25)
