"""Quaternions and rotations: the one place they are converted."""

import math

import numpy as np
import pytest
from harness_types.transforms import (
    matrix_to_quat,
    quat_to_matrix,
    rpy_to_matrix,
    tool_quat,
    tool_rotation,
    yaw_quat,
)


def random_rotations(n, seed=0):
    rng = np.random.default_rng(seed)
    for q in rng.normal(size=(n, 4)):
        yield q / np.linalg.norm(q)


def test_quaternion_round_trip_and_orthonormal():
    for q in random_rotations(500):
        r = quat_to_matrix(q)
        assert np.allclose(r @ r.T, np.eye(3), atol=1e-12) and np.isclose(np.linalg.det(r), 1)
        back = matrix_to_quat(r)
        assert back[0] >= 0
        assert np.allclose(back, q if q[0] >= 0 else -q, atol=1e-9)


def test_known_rotations():
    assert np.allclose(quat_to_matrix(yaw_quat(math.pi / 2)) @ [1, 0, 0], [0, 1, 0])
    assert np.allclose(rpy_to_matrix(0, 0, math.pi / 2), quat_to_matrix(yaw_quat(math.pi / 2)))
    assert np.allclose(rpy_to_matrix(math.pi / 2, 0, 0) @ [0, 1, 0], [0, 0, 1])
    # Straight down: the tool's x axis points to world -z, its jaws open along world x.
    down = tool_rotation(math.pi / 2)
    assert np.allclose(down[:, 0], [0, 0, -1]) and np.allclose(down[:, 1], [-1, 0, 0])
    assert np.allclose(quat_to_matrix(tool_quat(90)), down)


def test_a_quaternion_is_normalised_and_a_zero_one_refused():
    assert np.allclose(quat_to_matrix([2, 0, 0, 0]), np.eye(3))
    with pytest.raises(ValueError, match='not all 0'):
        quat_to_matrix([0, 0, 0, 0])
    with pytest.raises(ValueError):
        quat_to_matrix([np.nan, 0, 0, 1])
