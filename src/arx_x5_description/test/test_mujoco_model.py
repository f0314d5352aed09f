"""The MuJoCo station generated from the URDF: actuators, cameras, zero pose, holding still."""

from dataclasses import replace

import mujoco
import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from arx_x5_description.mujoco_model import station_model


@pytest.fixture(scope='module')
def emb():
    return load_embodiment()


@pytest.fixture(scope='module')
def model(emb):
    return station_model(emb)


def test_joints_and_actuators(emb, model):
    names = [model.joint(i).name for i in range(model.njnt)]
    assert names == emb.all_joint_names()
    actuators = [model.actuator(i).name for i in range(model.nu)]
    assert actuators == emb.command_layout
    grip = model.actuator('left_gripper')
    assert grip.ctrlrange == pytest.approx([-0.01, 0.044])
    assert model.joint('left_gripper').range == pytest.approx([0.0, 0.044])
    assert model.opt.timestep == pytest.approx(1 / 250)
    assert model.neq == 2  # the finger mimics


def test_tcp_at_zero_pose(model):
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    # Facts: each TCP at (-/+0.2995, -0.2073, 0.9215). Both arms are yawed +90 degrees with the
    # same chain, whose 0.5 mm y offset at joint5 puts the right TCP at x = 0.3005.
    assert data.site('left_tcp').xpos == pytest.approx([-0.2995, -0.2073, 0.9215], abs=1e-6)
    assert np.abs(data.site('right_tcp').xpos - [0.2995, -0.2073, 0.9215]).max() <= 1e-3 + 1e-9


@pytest.mark.parametrize('samples', [0, 4])
def test_renders_sample_as_configured(emb, samples):
    configured = replace(emb, sim=replace(emb.sim, msaa_samples=samples))
    assert station_model(configured).vis.quality.offsamples == samples


def test_cameras_match_facts(model):
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    head = data.cam('cam_head')
    assert head.xpos == pytest.approx([0.0, -0.41, 1.308])
    axes = head.xmat.reshape(3, 3).T  # rows: camera x, y, z in world
    assert axes[0] == pytest.approx([1, 0, 0], abs=1e-9)
    assert axes[1] == pytest.approx([0, 0.866, 0.5], abs=1e-3)
    assert model.cam('cam_head').fovy[0] == pytest.approx(79.6)
    assert list(model.cam_resolution[model.cam('cam_head').id]) == [640, 480]
    # wrist camera in link6: xyaxes "0 -1 0 0.342 0 0.940"
    link6 = data.body('left_link6')
    cam = data.cam('cam_left_wrist')
    local = link6.xmat.reshape(3, 3).T @ cam.xmat.reshape(3, 3)
    assert local[:, 0] == pytest.approx([0, -1, 0], abs=1e-9)
    assert local[:, 1] == pytest.approx([0.342, 0, 0.940], abs=1e-3)
    pos = link6.xmat.reshape(3, 3).T @ (cam.xpos - link6.xpos)
    assert pos == pytest.approx([0.0845, 0, 0.05], abs=1e-9)


def test_holds_pose_under_gravity(model):
    data = mujoco.MjData(model)
    data.ctrl[:] = 0.0
    for _ in range(500):
        mujoco.mj_step(model, data)
    assert np.abs(data.qpos).max() < 1e-4


def test_closed_gripper_target_squeezes_below_range(emb, model):
    data = mujoco.MjData(model)
    data.ctrl[6] = emb.gripper.target(0.0)
    for _ in range(100):
        mujoco.mj_step(model, data)
    force = data.actuator('left_gripper').force[0]
    assert force < -1.0  # still pushing closed at the joint's lower limit
