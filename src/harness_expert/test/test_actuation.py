"""Actuation against a stand-in robot that follows every row exactly: rows stay within the
shield's limits, lines are straight, grippers ramp and report what they hold."""

import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from harness_expert.actuation import Actuation
from harness_expert.observed import robot_state
from harness_policy.observation import PROMPT, STATE, TIME
from harness_types.execution import BLOCKED, COMPLETED, SKILL_ERROR
from harness_types.transforms import quat_to_matrix, tool_quat
from harness_worker.kinematics import StationKinematics

from arx_x5_description.urdf import station_urdf

DOWN = quat_to_matrix(tool_quat(90.0))


@pytest.fixture(scope='module')
def emb():
    return load_embodiment()


@pytest.fixture(scope='module')
def kinematics(emb):
    return StationKinematics(station_urdf(), emb)


class FollowingRobot:
    """Applies each row as the measured state (grippers: as commanded, or stopped at
    `stops_at` when closing on an object); records every row."""

    def __init__(self, stops_at: float | None = None, stuck: bool = False) -> None:
        self.rows: list[np.ndarray] = []
        self.stops_at = stops_at
        self.stuck = stuck
        self.state = np.zeros(14, dtype=np.float32)
        self.state[[6, 13]] = 1.0

    def obs(self) -> dict:
        return {STATE: self.state.copy(), TIME: np.float64(len(self.rows) / 25.0), PROMPT: ''}

    def send(self, rows: np.ndarray) -> dict:
        for row in rows:
            self.rows.append(row.copy())
            if not self.stuck:
                self.state = row.astype(np.float32)
            if self.stops_at is not None:
                self.state[6] = max(row[6], self.stops_at)
        return self.obs()


def actuation(emb, kinematics, robot, chunk=10):
    return Actuation(emb, kinematics, robot.send, robot.obs(), chunk)


def test_a_transit_rises_crosses_and_descends_within_the_speed(emb, kinematics):
    robot = FollowingRobot()
    act = actuation(emb, kinematics, robot)
    target = np.array([-0.2, 0.0, emb.table_top_z + 0.05])
    e = act.move_eef('left', target, DOWN)
    assert e.event == COMPLETED, e.detail
    rows = np.array(robot.rows)
    assert len(rows) % 10 == 0  # whole chunks
    steps = np.abs(np.diff(np.vstack([np.r_[np.zeros(6), 1, np.zeros(6), 1], rows]), axis=0))
    assert steps[:, :6].max() <= 1.0 / 25.0 + 1e-9  # 1 rad/s
    assert np.all(rows[:, 7:] == rows[0, 7:])  # the other arm holds still
    tcp = np.array([kinematics.arms['left'].fk(r[:6]).position for r in rows])
    assert np.linalg.norm(tcp[-1] - target) < 2e-3
    # never below the transit height until above the target
    far = np.linalg.norm(tcp[:, :2] - target[:2], axis=1) > 0.02
    assert tcp[far, 2].min() >= emb.table_top_z + act.pacing.safe_height_m - 0.01


def test_a_cartesian_move_is_a_straight_line(emb, kinematics):
    robot = FollowingRobot()
    act = actuation(emb, kinematics, robot)
    tilted = quat_to_matrix(tool_quat(60.0))
    start = np.array([-0.2, 0.0, emb.table_top_z + 0.15])
    assert act.move_eef('left', start, tilted).event == COMPLETED
    robot.rows.clear()
    end = start + [0.1, 0.05, -0.08]
    e = act.move_eef('left', end, tilted, cartesian=True, speed=0.4)
    assert e.event == COMPLETED
    tcp = np.array([kinematics.arms['left'].fk(r[:6]).position for r in robot.rows])
    d = (end - start) / np.linalg.norm(end - start)
    off = (tcp - start) - np.outer((tcp - start) @ d, d)
    assert np.linalg.norm(off, axis=1).max() < 3e-3
    # 0.4 of the speed: no faster than 0.1 m/s along the line
    assert np.linalg.norm(np.diff(tcp, axis=0), axis=1).max() <= 0.1 / 25 + 1e-3


def test_unreachable_targets_are_skill_errors_before_any_row(emb, kinematics):
    robot = FollowingRobot()
    act = actuation(emb, kinematics, robot)
    e = act.execute('move_eef', dict(arm='left', position=[-0.3, 0.6, 0.8], quat=tool_quat(90)))
    assert e.event == SKILL_ERROR and not robot.rows
    assert act.execute('wave', dict(arm='left')).event == SKILL_ERROR
    assert act.execute('move_eef', dict(arm='middle', position=[0, 0, 1])).event == SKILL_ERROR


def test_a_move_that_is_not_followed_is_blocked(emb, kinematics):
    robot = FollowingRobot(stuck=True)
    act = actuation(emb, kinematics, robot)
    e = act.move_eef('left', np.array([-0.2, 0.0, emb.table_top_z + 0.05]), DOWN)
    assert e.event == BLOCKED


def test_grippers_ramp_and_report_holding(emb, kinematics):
    robot = FollowingRobot(stops_at=0.5)
    act = actuation(emb, kinematics, robot)
    e = act.execute('close_gripper', dict(arm='left', fraction=0.0))
    assert e.holding is True and e.opening == pytest.approx(0.5)
    grip = np.array(robot.rows)[:, 6]
    assert np.abs(np.diff(grip[:13])).max() == pytest.approx(1.0 / 12)  # 12-tick ramp
    assert grip[-1] == 0.0  # the hold command squeezes below the measured opening
    empty = actuation(emb, kinematics, FollowingRobot())
    assert empty.execute('close_gripper', dict(arm='right', fraction=0.0)).holding is False


def test_home_brings_both_arms_to_zero(emb, kinematics):
    robot = FollowingRobot()
    act = actuation(emb, kinematics, robot)
    act.move_eef('right', np.array([0.2, 0.0, emb.table_top_z + 0.05]), DOWN)
    assert act.home().event == COMPLETED
    assert np.abs(robot.rows[-1][[*range(6), *range(7, 13)]]).max() < 1e-9


def test_the_state_knows_the_fingers_from_the_openings(emb, kinematics):
    robot = FollowingRobot()
    robot.state[6] = 0.5
    state = robot_state(robot.obs(), kinematics, emb)
    assert state.left.fingers[0] == pytest.approx(emb.gripper.target(0.5))
    assert state.right.fingers[0] == pytest.approx(emb.gripper.upper)
    assert np.linalg.norm(state.left.tcp_position - [-0.2995, -0.2073, 0.9215]) < 2e-3
