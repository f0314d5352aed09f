"""pinocchio kinematics against MuJoCo and against itself (IK round trips)."""

import mujoco
import numpy as np
import pytest
from arx_x5_description.embodiment import ARMS, load_embodiment
from arx_x5_description.mujoco_model import station_model
from harness_worker.kinematics import StationKinematics

from arx_x5_description.urdf import station_urdf


@pytest.fixture(scope='module')
def emb():
    return load_embodiment()


@pytest.fixture(scope='module')
def kin(emb):
    return StationKinematics(station_urdf(), emb)


def rotation_angle(a, b):
    cos = (np.trace(a.T @ b) - 1) / 2
    return float(np.arccos(np.clip(cos, -1, 1)))


def test_fk_matches_mujoco_for_200_random_joint_vectors(emb, kin):
    model = station_model(emb)
    data = mujoco.MjData(model)
    rng = np.random.default_rng(7)
    lower, upper = np.array(emb.lower), np.array(emb.upper)
    qadr = {arm: [model.joint(n).qposadr[0] for n in emb.arm_joint_names(arm)] for arm in ARMS}
    for _ in range(200):
        qs = {arm: rng.uniform(lower, upper) for arm in ARMS}
        for arm in ARMS:
            data.qpos[qadr[arm]] = qs[arm]
        mujoco.mj_kinematics(model, data)
        for arm in ARMS:
            link6, tcp = kin.arms[arm].fk_both(qs[arm])
            body6, body_tcp = data.body(f'{arm}_link6'), data.body(f'{arm}_tcp')
            assert np.abs(link6.position - body6.xpos).max() < 1e-6
            assert np.abs(tcp.position - body_tcp.xpos).max() < 1e-6
            assert np.abs(link6.rotation - body6.xmat.reshape(3, 3)).max() < 1e-6
            assert np.abs(tcp.rotation - body_tcp.xmat.reshape(3, 3)).max() < 1e-6


def test_tcp_at_zero(kin):
    assert kin.arms['left'].fk(np.zeros(6)).position == pytest.approx(
        [-0.2995, -0.2073, 0.9215], abs=1e-6
    )
    right = kin.arms['right'].fk(np.zeros(6)).position
    assert np.abs(right - [0.2995, -0.2073, 0.9215]).max() <= 1e-3 + 1e-9


@pytest.mark.parametrize('arm', ARMS)
def test_ik_round_trip_200_reachable_poses(emb, kin, arm):
    ik = kin.arms[arm]
    rng = np.random.default_rng(11)
    lower, upper = np.array(emb.lower), np.array(emb.upper)
    for _ in range(200):
        target = ik.fk(rng.uniform(lower, upper))
        result = ik.ik(target.position, target.rotation)
        assert result.ok, result.reason
        reached = ik.fk(result.joints)
        assert np.linalg.norm(reached.position - target.position) < 1e-3
        assert rotation_angle(reached.rotation, target.rotation) < 0.01
        assert np.all(result.joints >= lower) and np.all(result.joints <= upper)


def test_ik_position_only(kin):
    ik = kin.arms['right']
    result = ik.ik(np.array([0.25, 0.0, 0.95]))
    assert result.ok, result.reason
    assert np.linalg.norm(ik.fk(result.joints).position - [0.25, 0.0, 0.95]) < 1e-3


@pytest.mark.parametrize(
    'target',
    [
        [-0.3, 0.6, 0.9],  # 1.05 m from the left shoulder: beyond the 0.757 m reach
        [-0.3, -0.45, 2.0],  # straight up, far out of reach
        [3.0, 3.0, 3.0],
    ],
)
def test_ik_unreachable_reports_failure(kin, target):
    result = kin.arms['left'].ik(np.array(target))
    assert not result.ok
    assert 'cannot reach' in result.reason
    assert result.position_error > 1e-3


def test_ik_unreachable_orientation_reports_failure(kin):
    ik = kin.arms['left']
    # A reachable point, but with the tool pointing back at the robot's own base from too close.
    position = np.array([-0.3, -0.40, 0.80])
    flipped = np.diag([-1.0, -1.0, 1.0]) @ ik.fk(np.zeros(6)).rotation
    result = ik.ik(position, flipped)
    if result.ok:  # if the solver claims success the answer must be right
        reached = ik.fk(result.joints)
        assert np.linalg.norm(reached.position - position) < 1e-3
        assert rotation_angle(reached.rotation, flipped) < 0.01
    else:
        assert result.reason


def test_ik_rejects_malformed_targets(kin):
    assert not kin.arms['left'].ik(np.array([np.nan, 0, 0])).ok
    assert not kin.arms['left'].ik(np.array([0.1, 0.2])).ok
    with pytest.raises(ValueError, match='frame must be'):
        kin.arms['left'].fk(np.zeros(6), frame='elbow')


def test_jacobian_matches_finite_differences(kin):
    ik = kin.arms['left']
    q = np.array([0.2, 1.0, 1.2, 0.3, -0.2, 0.4])
    J = ik.jacobian(q)
    eps = 1e-6
    for i in range(6):
        dq = np.zeros(6)
        dq[i] = eps
        numeric = (ik.fk(q + dq).position - ik.fk(q - dq).position) / (2 * eps)
        assert numeric == pytest.approx(J[:3, i], abs=1e-6)
