"""The staged scenes are what their names say: a held cube is off the table in a closed
gripper, stacked blocks rest on each other, a scripted move ends where it was asked to."""

import os

import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from harness_testing.scripted_motion import joint_steps, reach
from harness_testing.staging import hold_object, stack_boxes, true_centre
from harness_worker.worker import Worker

from arx_x5_description.urdf import station_urdf

os.environ.setdefault('MUJOCO_GL', 'egl')


@pytest.fixture(scope='module')
def worker():
    w = Worker(load_embodiment(), station_urdf())
    yield w
    w.close()


def test_a_held_cube_is_off_the_table_in_a_closed_gripper(worker):
    worker.reset('lift_cube', 0, 0)
    (cube,) = worker.station.objects
    assert hold_object(worker, cube.name, lift=0.15)
    bottom = true_centre(worker.station, cube)[2] - cube.size[2]  # size: half extents
    assert bottom > worker.emb.table_top_z + 0.08
    assert min(a.gripper for a in worker.state().arms.values()) < 0.9


def test_stacked_blocks_rest_on_each_other(worker):
    worker.reset('stack_blocks_two', 0, 0, token=worker._token or '')
    stack_boxes(worker)
    below, above = sorted(worker.station.objects, key=lambda s: true_centre(worker.station, s)[2])
    gap = true_centre(worker.station, above)[2] - true_centre(worker.station, below)[2]
    assert gap == pytest.approx(below.size[2] + above.size[2], abs=0.005)  # half extents


def test_joint_steps_stay_within_the_step_and_end_at_the_goal():
    start, goal = np.zeros(6), np.array([0.5, -0.3, 0.2, 0.0, 0.1, -0.4])
    steps = joint_steps(start, goal, max_step=0.08)
    assert np.allclose(steps[-1], goal)
    path = np.vstack([start, *steps])
    assert np.abs(np.diff(path, axis=0)).max() <= 0.08 + 1e-12


def test_reach_finds_joints_whose_tool_is_at_the_point(worker):
    arm = worker.kinematics.arms['left']
    target = arm.fk(np.array([0.2, 0.5, 0.4, 0.0, 0.3, 0.0])).position
    joints = reach(arm, target)
    assert np.linalg.norm(arm.fk(joints).position - target) < 0.005
