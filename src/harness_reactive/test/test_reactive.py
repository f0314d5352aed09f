"""Guards, watches, budgets and controller targets, without ROS."""

import time

import numpy as np
import pytest
from harness_reactive.budget import run_budgeted
from harness_reactive.guards import Guard, GuardSet, Watch, check_action
from harness_reactive.stage import ProgramStage, check_targets
from harness_types.robot_state import ArmState, RobotState


def obs(z=0.9, force=0.0, step=3):
    def arm(name):
        return ArmState(
            name,
            np.zeros(6),
            1.0,
            np.array([0.0, 0.0, z]),
            np.array([1.0, 0, 0, 0]),
            np.array([0.0, 0.0, z + 0.1]),
            grip_force=force,
        )

    return RobotState(arm('left'), arm('right'), step, step / 25)


def test_signals_are_named_numbers():
    s = obs(z=0.85, force=3.0).signals()
    assert s['left_tcp_z'] == 0.85 and s['left_link6_z'] == pytest.approx(0.95)
    assert s['left_grip_force'] == 3.0 and s['left_contact'] == 1.0
    assert s['right_joint6'] == 0.0 and s['step'] == 3.0


@pytest.mark.parametrize('action', ['stop', 'hold', 'open_gripper', 'CONTACT', 'TOUCHED_TABLE'])
def test_valid_actions(action):
    assert check_action(action) == action


@pytest.mark.parametrize('action', ['', 'Stop', 'open', 'contact', 'X'])
def test_invalid_actions_say_what_is_allowed(action):
    with pytest.raises(ValueError, match='stop, hold, open_gripper'):
        check_action(action)


def test_watch_ranges():
    w = Watch('high', 'left_tcp_z', 0.88, 1.2)
    assert w.check(obs(z=0.9).signals()) is None
    assert w.check(obs(z=0.88).signals()) is None
    assert 'fell below 0.88' in w.check(obs(z=0.8799).signals())
    with pytest.raises(KeyError, match='unknown signal'):
        Watch('x', 'left_elbow', 0, 1).check(obs().signals())
    with pytest.raises(ValueError, match='above high'):
        Watch('x', 'left_tcp_z', 2, 1)


def test_guard_set_replaces_and_clears_by_name():
    gs = GuardSet()
    gs.add(Guard('a', lambda o: False))
    gs.add(Watch('b', 'left_tcp_z', 0, 2))
    gs.add(Guard('a', lambda o: True))
    assert gs.names() == ['a', 'b']
    assert gs.clear(['a']) == ['a']
    with pytest.raises(KeyError, match="no guard named 'zzz'"):
        gs.clear(['zzz'])
    assert gs.clear() == ['b'] and len(gs) == 0


def test_budget_reports_raise_slow_io_and_sleep():
    assert run_budgeted('ok', lambda: 5, budget_ms=20).value == 5
    raised = run_budgeted('guard g', lambda: {}['k'], budget_ms=20)
    assert 'guard g raised KeyError' in raised.fault
    slow = run_budgeted('guard g', lambda: sum(range(3_000_000)), budget_ms=1)
    assert 'over its 1 ms budget' in slow.fault
    io = run_budgeted('guard g', lambda: open('/etc/hostname').read(), budget_ms=1000)
    assert 'did open' in io.fault
    swallowed = run_budgeted('guard g', _swallow_io, budget_ms=1000)
    assert 'did open' in swallowed.fault  # catching the error does not hide the I/O
    slept = run_budgeted('guard g', lambda: time.sleep(0.001), budget_ms=1000)
    assert 'time.sleep' in slept.fault
    # outside reactive code, I/O is untouched
    assert open('/etc/hostname').read() is not None


def _swallow_io():
    try:
        open('/etc/hostname')
    except Exception:
        return False


def test_stage_order_guards_then_until_then_controller():
    stage = ProgramStage(budget_ms=50)
    assert not stage.active
    stage.controller = lambda o: {'left_gripper': 0.5}
    r = stage.step(obs())
    assert r.targets['left_gripper'] == pytest.approx([0.5])
    stage.until = lambda o: o.step >= 3
    assert stage.step(obs()).until_satisfied and not stage.step(obs()).targets
    stage.guards.add(Guard('force', lambda o: o.arms['left'].grip_force > 1, 'CONTACT'))
    r = stage.step(obs(force=2.0))
    assert r.guard_fired == 'force' and r.guard_action == 'CONTACT'
    stage.guards.add(Watch('low', 'left_tcp_z', 0.95, 2.0, 'hold'))
    r = stage.step(obs(z=0.9))
    assert r.guard_fired == 'low' and r.evaluated == ('force', 'low')


@pytest.mark.parametrize(
    'raw,message',
    [
        ([1, 2], 'must return a dict'),
        ({'elbow': [0]}, 'unknown controller target'),
        ({'left': [0, 0, 0]}, 'needs 6 numbers'),
        ({'left_eef': [0, 0]}, 'needs 3 or 7'),
        ({'left_gripper': [np.nan]}, 'non-finite'),
    ],
)
def test_controller_targets_are_checked(raw, message):
    with pytest.raises(ValueError, match=message):
        check_targets(raw)
    stage = ProgramStage(budget_ms=20.0)
    stage.controller = lambda o: raw
    assert message in stage.step(obs()).fault or 'must return' in stage.step(obs()).fault
