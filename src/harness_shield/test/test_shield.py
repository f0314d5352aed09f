"""Every check at, just inside and just outside its boundary, for both arms."""

import numpy as np
import pytest
from harness_shield.shield import Shield

ARM_OFFSETS = {'left': 0, 'right': 7}
TOL = 1e-3


def test_config_from_the_embodiment_yaml(config):
    assert config.size == 14
    assert config.max_joint_jump_rad == 0.3
    assert config.max_cartesian_jump_m == 0.25
    assert config.joint_limit_tolerance_rad == TOL
    assert config.names[0] == 'left_joint1' and config.names[13] == 'right_gripper'
    assert config.upper[1] == pytest.approx(3.50)


def test_a_hold_command_is_accepted(shield, home):
    verdict = shield.check(home, home)
    assert verdict.accepted and verdict.reasons == ()


@pytest.mark.parametrize('length', [0, 13, 15, 28])
def test_wrong_length_is_rejected(shield, home, length):
    verdict = shield.check([0.0] * length, home)
    assert not verdict.accepted
    assert verdict.reasons[0].check == 'shape'
    assert f'{length} numbers' in verdict.reasons[0].message


@pytest.mark.parametrize('bad', [[[0.0] * 14], 'fourteen', None, {'a': 1}])
def test_non_vectors_are_rejected(shield, home, bad):
    verdict = shield.check(bad, home)
    assert not verdict.accepted and verdict.reasons[0].check == 'shape'


@pytest.mark.parametrize('value', [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize('index', [0, 6, 7, 13])
def test_non_finite_is_rejected_naming_the_entry(shield, home, config, value, index):
    command = home.copy()
    command[index] = value
    verdict = shield.check(command, home)
    assert not verdict.accepted
    assert verdict.reasons[0].check == 'finite'
    assert verdict.reasons[0].entry == config.names[index]


def joint_cases():
    for arm in ARM_OFFSETS:
        for j in range(6):
            for side in ('lower', 'upper'):
                yield arm, j, side


@pytest.mark.parametrize('arm,j,side', list(joint_cases()))
def test_joint_limit_boundaries(config, home, arm, j, side):
    i = ARM_OFFSETS[arm] + j
    limit = config.lower[i] if side == 'lower' else config.upper[i]
    out = -1.0 if side == 'lower' else 1.0
    # The robot sits exactly at the limit; the check is on how far past it the target goes.
    measured = home.copy()
    measured[i] = limit
    for past, ok in (
        (0.0, True),
        (-0.01, True),
        (TOL * 0.9, True),
        (TOL * 1.1, False),
        (0.05, False),
    ):
        shield = Shield(config, _inside)
        command = measured.copy()
        command[i] = limit + out * past
        verdict = shield.check(command, measured)
        assert verdict.accepted == ok, (past, verdict.messages())
        if not ok:
            (reason,) = verdict.reasons
            assert reason.check == 'joint_limit' and reason.arm == arm
            assert reason.entry == config.names[i]
            assert side in reason.message
            assert reason.amount == pytest.approx(past)


def _inside(_q):
    # FK that always lands in the middle of the workspace: isolates the joint checks.
    return [np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0])]


@pytest.mark.parametrize('arm', ARM_OFFSETS)
def test_starting_outside_a_limit_may_move_back_in_but_not_further(config, home, arm):
    i = ARM_OFFSETS[arm] + 1  # joint2, upper limit 3.5
    upper = config.upper[i]
    measured = home.copy()
    measured[i] = upper + 0.05
    cases = [
        (upper + 0.03, True),
        (upper + 0.05, True),
        (upper + 0.05 + TOL * 0.9, True),
        (upper + 0.05 + TOL * 1.1, False),
        (upper + 0.08, False),
        (upper - 0.1, True),
    ]
    for target, ok in cases:
        shield = Shield(config, _inside)
        command = measured.copy()
        command[i] = target
        assert shield.check(command, measured).accepted == ok, target


@pytest.mark.parametrize('arm', ARM_OFFSETS)
@pytest.mark.parametrize(
    'value,ok',
    [
        (0.0, True),
        (1.0, True),
        (0.5, True),
        (-1e-6, False),
        (1.000001, False),
        (-0.5, False),
        (2.0, False),
    ],
)
def test_gripper_range(shield, home, arm, value, ok):
    command = home.copy()
    command[ARM_OFFSETS[arm] + 6] = value
    verdict = shield.check(command, home)
    assert verdict.accepted == ok
    if not ok:
        assert verdict.reasons[0].check == 'gripper_range' and verdict.reasons[0].arm == arm


@pytest.mark.parametrize('arm', ARM_OFFSETS)
@pytest.mark.parametrize(
    'jump,ok', [(0.3, True), (0.299, True), (0.301, False), (-0.301, False), (0.5, False)]
)
def test_joint_jump_from_measured_without_a_last_command(config, home, arm, jump, ok):
    shield = Shield(config, _inside)
    i = ARM_OFFSETS[arm] + 4  # joint5, range +-1.571: room both ways
    command = home.copy()
    command[i] += jump
    verdict = shield.check(command, home)
    assert verdict.accepted == ok
    if not ok:
        assert verdict.reasons[0].check == 'joint_jump'
        assert verdict.reasons[0].entry == config.names[i]
        assert 'no command accepted yet' in verdict.reasons[0].message


@pytest.mark.parametrize('arm', ARM_OFFSETS)
def test_joint_jump_needs_both_the_last_command_and_the_measured_state(config, home, arm):
    shield = Shield(config, _inside)
    i = ARM_OFFSETS[arm] + 4
    step = home.copy()
    step[i] += 0.25
    assert shield.check(step, home).accepted  # the arm lags: still measured at home
    further = home.copy()
    further[i] += 0.5  # 0.5 from measured, 0.25 from the last command: accepted
    assert shield.check(further, home).accepted
    too_far = home.copy()
    too_far[i] += 0.81  # 0.81 from measured, 0.31 from the last command: rejected
    verdict = shield.check(too_far, home)
    assert not verdict.accepted and verdict.reasons[0].check == 'joint_jump'
    # the rejected command did not become the last accepted one
    assert shield.last_accepted[i] == pytest.approx(home[i] + 0.5)
    # once the arm has caught up, the jump is measured from there
    caught_up = home.copy()
    caught_up[i] += 0.55
    assert shield.check(too_far, caught_up).accepted


def test_reset_forgets_the_last_command(config, home):
    shield = Shield(config, _inside)
    step = home.copy()
    step[4] += 0.25
    assert shield.check(step, home).accepted
    further = home.copy()
    further[4] += 0.5
    shield.reset()
    assert shield.last_accepted is None
    assert not shield.check(further, home).accepted  # only the measured state counts now


@pytest.mark.parametrize('arm', ARM_OFFSETS)
def test_workspace_box_boundaries(shield, config, home, arm):
    # With the linear FK, joint3 moves link6 up in z from 0.9 + q3; the box top is 1.6.
    i = ARM_OFFSETS[arm] + 2
    top = config.workspace_max[2] - 0.9
    measured = home.copy()
    measured[i] = top - 0.1
    for z_past, ok in ((-0.01, True), (0.0, True), (1e-6, False), (0.05, False)):
        command = measured.copy()
        command[i] = top + z_past
        shield.reset()
        verdict = shield.check(command, measured)
        assert verdict.accepted == ok, (z_past, verdict.messages())
        if not ok:
            (reason,) = verdict.reasons
            assert reason.check == 'workspace' and reason.arm == arm
            assert reason.amount == pytest.approx(z_past, abs=1e-9)


@pytest.mark.parametrize('arm', ARM_OFFSETS)
def test_outside_the_box_may_move_back_in_but_not_further_out(shield, config, home, arm):
    i = ARM_OFFSETS[arm] + 2
    top = config.workspace_max[2] - 0.9
    measured = home.copy()
    measured[i] = top + 0.1  # link6 starts 0.1 m above the box
    for target, ok in (
        (top + 0.05, True),
        (top + 0.1, True),
        (top - 0.05, True),
        (top + 0.1 + 1e-6, False),
        (top + 0.2, False),
    ):
        command = measured.copy()
        command[i] = target
        shield.reset()
        assert shield.check(command, measured).accepted == ok, target


@pytest.mark.parametrize('arm', ARM_OFFSETS)
def test_cartesian_jump_needs_both_poses(shield, config, home, arm):
    base = ARM_OFFSETS[arm]
    # three joints each 0.15 rad (< 0.3): link6 moves sqrt(3) * 0.15 = 0.26 m > 0.25
    command = home.copy()
    command[base : base + 3] += 0.15
    verdict = shield.check(command, home)
    assert not verdict.accepted
    (reason,) = verdict.reasons
    assert reason.check == 'cartesian_jump' and reason.arm == arm
    # just inside: 0.144 rad each -> 0.249 m
    inside = home.copy()
    inside[base : base + 3] += 0.144
    assert shield.check(inside, home).accepted
    # from the last command (0.249 m away) the 0.26 m target is 0.01 m: accepted
    assert shield.check(command, home).accepted


def test_every_reason_is_reported_at_once(shield, home):
    command = home.copy()
    command[1] = 5.0  # left joint2 past its limit, a jump, and link6 out of the box
    command[13] = 1.5  # right gripper out of range
    verdict = shield.check(command, home)
    checks = {r.check for r in verdict.reasons}
    assert {'joint_limit', 'joint_jump', 'workspace', 'cartesian_jump', 'gripper_range'} <= checks
    assert {r.arm for r in verdict.reasons} == {'left', 'right'}


def test_measured_state_must_be_valid(shield, home):
    with pytest.raises(ValueError, match='measured state'):
        shield.check(home, home[:13])


def test_the_lead_over_the_measured_joints_is_bounded(config, home):
    shield = Shield(config, lambda q: [np.zeros(3), np.zeros(3)])
    limit = config.max_lead_rad
    assert limit == pytest.approx(0.6)
    command = home.copy()
    # The arm does not follow: each command is a small step from the last accepted one.
    step = 0.25
    accepted = 0
    for _ in range(6):
        command[0] += step
        verdict = shield.check(command.copy(), home)
        if not verdict.accepted:
            break
        accepted += 1
    assert accepted == int(limit / step)  # 0.25, 0.5 accepted; 0.75 ahead is refused
    (reason,) = verdict.reasons
    assert reason.check == 'lead' and reason.entry == 'left_joint1'
    assert reason.amount == pytest.approx(0.75) and 'ahead of the measured' in reason.message
    # Coming back toward the measured arm is always allowed.
    back = command.copy()
    back[0] = 0.3
    assert shield.check(back, home).accepted


def test_collisions_deeper_than_already_are_rejected(config, home):
    from harness_shield.shield import Contacts

    depth = {}

    def clearance(q):
        return depth.get(round(float(q[0]), 3), Contacts((0.0, 0.0), 0.0))

    shield = Shield(config, lambda q: [np.zeros(3), np.zeros(3)], clearance)
    tolerance = config.collision_tolerance_m
    command = home.copy()
    command[0] = home[0] + 0.1
    depth[round(float(command[0]), 3)] = Contacts((tolerance * 2, 0.0), tolerance * 3)
    verdict = shield.check(command, home)
    assert [r.check for r in verdict.reasons] == ['table_collision', 'arm_collision']
    assert verdict.reasons[0].arm == 'left' and 'into the table' in verdict.reasons[0].message
    # Within the tolerance, or no deeper than the measured pose already is: accepted.
    depth[round(float(command[0]), 3)] = Contacts((tolerance * 0.5, 0.0), 0.0)
    assert shield.check(command, home).accepted
    depth[round(float(home[0]), 3)] = Contacts((0.02, 0.0), 0.0)
    depth[round(float(command[0]), 3)] = Contacts((0.015, 0.0), 0.0)
    assert shield.check(command, home).accepted  # moving out of the table
