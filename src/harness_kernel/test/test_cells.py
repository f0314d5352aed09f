"""The kernel core without ROS: statuses, persistence, output, names, handlers, timeouts."""

import numpy as np
import pytest
from harness_kernel.api import ProgramApi
from harness_kernel.cell import CellRunner
from harness_kernel.records import ArmView, Execution, StateView
from harness_reactive.stage import ProgramStage


class ScriptedRobot:
    """Answers each skill with the next scripted event (a stand-in for the skill server)."""

    def __init__(self):
        self.events = []
        self.calls = []

    def execute(self, skill, goal, reactive):
        self.calls.append((skill, goal, reactive))
        name = self.events.pop(0) if self.events else 'COMPLETED'
        return Execution(skill, goal.get('arm', ''), name, f'{skill} ended with {name}')

    def state(self):
        arm = ArmView([0.0] * 6, 1.0, [0.0, 0.0, 0.9], [1.0, 0, 0, 0], 0.0)
        return StateView(arm, arm, 0, 0.0)

    def image(self, camera):
        return np.zeros((4, 4, 3), np.uint8)

    def views(self):
        return []

    def reachable(self, arm, position, quat):
        return True


@pytest.fixture
def kernel():
    robot = ScriptedRobot()
    log = []
    api = ProgramApi(robot, ProgramStage(), log.append)
    runner = CellRunner(api.functions(), cell_timeout_seconds=2.0)
    return runner, robot, api, log


def test_ok_and_variables_persist(kernel):
    runner, *_ = kernel
    assert runner.run('x = 41\nprint("hello")').status == 'ok'
    r = runner.run('x += 1\nprint(x)')
    assert r.status == 'ok' and r.output.strip() == '42'


def test_error_traceback_has_only_program_frames(kernel):
    runner, *_ = kernel
    r = runner.run('def f():\n    return 1 / 0\n\nf()')
    assert r.status == 'error'
    assert 'ZeroDivisionError' in r.traceback
    assert '<cell 1>' in r.traceback and 'return 1 / 0' in r.traceback
    assert 'harness_kernel' not in r.traceback and 'cell.py' not in r.traceback
    syntax = runner.run('def (:')
    assert syntax.status == 'error' and 'SyntaxError' in syntax.traceback


def test_output_is_clipped_even_for_10_mb(kernel):
    runner, *_ = kernel
    r = runner.run('print("x" * 10_000_000)')
    assert r.status == 'ok'
    assert len(r.output) < 8100 and 'output clipped' in r.output


def test_finish(kernel):
    runner, *_ = kernel
    r = runner.run('finish("cube lifted")\nprint("never")')
    assert r.status == 'finished' and r.summary == 'cube lifted' and 'never' not in r.output


def test_escalated_with_the_event(kernel):
    runner, robot, *_ = kernel
    robot.events = ['BLOCKED']
    r = runner.run('move_joints([0, 0.5, 0.5, 0, 0, 0], arm="left")\nprint("after")')
    assert r.status == 'escalated' and r.event.event == 'BLOCKED' and 'after' not in r.output


def test_episode_ended(kernel):
    runner, robot, *_ = kernel
    robot.events = ['EPISODE_ENDED']
    assert runner.run('home()').status == 'episode_ended'


def test_handler_absorbs_or_refuses(kernel):
    runner, robot, api, _ = kernel
    robot.events = ['BLOCKED']
    r = runner.run(
        'seen = []\non("BLOCKED", lambda e: seen.append(e.event) or True)\n'
        'r = move_eef([0.1, 0.0, 0.9])\nprint(r.event, r.handled, seen)'
    )
    assert r.status == 'ok' and "BLOCKED True ['BLOCKED']" in r.output
    assert api.events_handled == 1
    robot.events = ['TIMEOUT']
    r = runner.run('on("TIMEOUT", lambda e: False)\nmove_eef([0.1, 0.0, 0.9])')
    assert r.status == 'escalated' and r.event.event == 'TIMEOUT'


def test_raising_inside_a_handler_is_a_clear_error(kernel):
    runner, robot, *_ = kernel
    robot.events = ['REGION_EXIT']
    r = runner.run('def h(e):\n    raise ValueError("oops")\non("*", h)\nhome()')
    assert r.status == 'error'
    assert 'handler for REGION_EXIT raised ValueError: oops' in r.traceback
    assert runner.run('print("still alive")').status == 'ok'


def test_rebound_api_names_are_restored(kernel):
    runner, *_ = kernel
    r = runner.run('def home():\n    return "mine"\nmove_eef = 3')
    assert r.status == 'ok' and set(r.restored) == {'home', 'move_eef'}
    assert 'restored API names' in r.output
    assert runner.run('r = home()\nprint(type(r).__name__)').output.strip() == 'Execution'


def test_endless_loop_is_stopped_by_the_cell_timeout(kernel):
    runner, *_ = kernel
    r = runner.run('while True:\n    pass')
    assert r.status == 'error' and 'cell_timeout_seconds' in r.traceback
    swallowed = runner.run('try:\n    while True: pass\nexcept Exception:\n    print("caught")')
    assert swallowed.status == 'error' and 'caught' not in swallowed.output
    assert runner.run('print(1)').status == 'ok'


def test_guards_make_executions_reactive_and_are_logged(kernel):
    runner, robot, api, log = kernel
    r = runner.run(
        'when(lambda obs: obs.arms["left"].grip_force > 2, "CONTACT", name="touch")\n'
        'watch("left_tcp_z", 0.8, 1.5)\nmove_eef([0.1, 0.0, 0.9])'
    )
    assert r.status == 'ok'
    assert robot.calls[-1][2] is True  # the goal asked for reactive_step
    assert [g for g in api.stage.guards.names()] == ['touch', 'watch_left_tcp_z']
    assert runner.run('clear_guards()').status == 'ok' and not api.stage.active
    calls = [entry['call'] for entry in log]
    assert calls[:3] == ['when', 'watch', 'move_eef']
    assert log[2]['result']['event'] == 'COMPLETED'
    bad = runner.run('when(lambda o: True, "explode")')
    assert bad.status == 'error' and 'guard action must be one of' in bad.traceback
