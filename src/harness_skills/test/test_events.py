"""Integration: worker + skill server + a reactive_step test node + a client, all real nodes.

Each event of ARCHITECTURE.md section 5 is produced by causing it.
"""

import math
import time

import numpy as np
import pytest
from geometry_msgs.msg import Point
from harness_bringup.station_graph import StationGraph
from harness_reactive.guards import Guard
from harness_reactive.stage import ProgramStage
from harness_skills.skill_table import SKILLS
from harness_types.convert import robot_state_of
from harness_types.wait import wait_future
from rclpy.node import Node

from harness_msgs.action import Gripper, Home, MoveEef, MoveJoints, RunController
from harness_msgs.msg import Watch as WatchMsg
from harness_msgs.srv import ReactiveStep, State
from harness_types import names


def wait(future, timeout=120.0):
    return wait_future(future, timeout)


def serve_reactive_step(node, stage):
    """A stand-in for the kernel's reactive_step: the stage answers in this process."""

    def handle(request, response):
        r = stage.step(robot_state_of(request.state), request.call_controller)
        response.fault, response.fault_reason = bool(r.fault), r.fault
        response.guard_fired, response.guard_action = r.guard_fired, r.guard_action
        response.guard_detail, response.until_satisfied = r.guard_detail, r.until_satisfied
        response.target_keys = list(r.targets)
        response.target_lengths = [int(v.shape[0]) for v in r.targets.values()]
        response.target_values = [float(x) for v in r.targets.values() for x in v]
        return response

    return node.create_service(ReactiveStep, names.REACTIVE_STEP, handle)


class Graph(StationGraph):
    """The station plus a program stand-in serving reactive_step and the skill action clients."""

    def __enter__(self):
        super().__enter__()
        self.program = Node('program_stand_in', context=self.context)
        self.stage = ProgramStage(budget_ms=20.0)
        serve_reactive_step(self.program, self.stage)
        self.add_node(self.program)
        self.calls = []
        self.actions = {
            name: self.action_client(spec.action, names.skill_action(name))
            for name, spec in SKILLS.items()
        }
        self.state_client = self.client.create_client(State, '/worker/state')
        for a in self.actions.values():
            assert a.wait_for_server(timeout_sec=10)
        return self

    def reset(self, task='lift_cube', layout=0):
        r = super().reset(task, layout)
        assert r.success, r.message
        self.stage.guards.clear()
        self.stage.until = self.stage.controller = None
        return r

    def state(self):
        return wait(self.state_client.call_async(State.Request())).state

    def run(self, name, goal):
        handle = wait(self.actions[name].send_goal_async(goal))
        assert handle.accepted
        return wait(handle.get_result_async()).result.execution


@pytest.fixture(scope='module')
def graph():
    with Graph('client') as g:
        yield g


def eef(arm, xyz, **options):
    goal = MoveEef.Goal(arm=arm, position=Point(x=xyz[0], y=xyz[1], z=xyz[2]))
    for k, v in options.items():
        setattr(goal.options, k, v)
    return goal


def cube_position(graph):
    return np.array(graph.worker.worker.station.object_pose('cube')[0])  # test-side truth only


def test_completed_with_a_trace(graph):
    graph.reset()
    r = graph.run('move_joints', MoveJoints.Goal(arm='left', positions=[0.2, 0.3, 0.3, 0, 0, 0]))
    assert r.event.name == 'COMPLETED', r.event.detail
    assert r.ticks and len(r.ticks[0].command) == 14
    assert r.end_step > r.start_step


def test_timeout(graph):
    graph.reset()
    goal = MoveJoints.Goal(arm='left', positions=[1.0, 1.0, 1.0, 0, 0, 0])
    goal.options.max_seconds = 0.3
    r = graph.run('move_joints', goal)
    assert r.event.name == 'TIMEOUT'
    assert len(r.ticks) == 8  # 0.3 s at 25 Hz, counted in ticks of simulated time


def test_skill_error_for_an_unreachable_pose(graph):
    graph.reset()
    r = graph.run('move_eef', eef('left', (-0.3, 0.7, 0.9)))
    assert r.event.name == 'SKILL_ERROR' and 'cannot reach' in r.event.detail
    assert not r.ticks


def test_into_the_table_ends_at_the_force_limit_with_the_force(graph):
    graph.reset()
    # Joint targets whose TCP lies 6 cm inside the table: the fingers press on the table, and
    # the execution ends when they press harder than the limit (the shield's depth bound
    # would end it only millimetres later, after the force).
    kin = graph.worker.worker.kinematics.arms['left']
    solved = kin.ik(np.array([-0.25, 0.0, 0.705]))
    assert solved.ok
    r = graph.run(
        'move_joints', MoveJoints.Goal(arm='left', positions=solved.joints.tolist(), speed=0.6)
    )
    assert r.event.name == 'FORCE_LIMIT', r.event.detail
    assert 'left arm pressed with' in r.event.detail and '20 N limit' in r.event.detail
    assert 20.0 < float(r.event.detail.split('pressed with ')[1].split(' N')[0]) < 40.0


def test_a_slow_walk_into_the_table_ends_at_the_force_limit(graph):
    """A controller lowering the TCP 1 mm a tick into the table (the attack that pressed with
    44.6 N before the shield stopped it 7-9 mm deep): FORCE_LIMIT, the force measured under
    the limit's first crossing, and the arm holds where it is."""
    graph.reset()
    start = graph.state().left.tcp.position
    target = [start.x, start.y, start.z]

    def lower(obs):
        target[2] -= 0.001
        return {'left_eef': list(target)}

    graph.stage.controller = lower
    goal = RunController.Goal(hz=25.0)
    goal.options.reactive = True
    goal.options.max_seconds = 20.0
    r = graph.run('run_controller', goal)
    assert r.event.name == 'FORCE_LIMIT', r.event.detail
    force = float(r.event.detail.split('pressed with ')[1].split(' N')[0])
    assert 20.0 < force < 30.0, r.event.detail
    assert graph.state().left.contact_force < 20.0  # it holds, no longer pushing


def _press_into_the_cube(graph):
    cube = cube_position(graph)
    assert graph.run('close_gripper', Gripper.Goal(arm='left', target=0.0)).event.name == (
        'COMPLETED'
    )
    assert graph.run('move_eef', eef('left', cube + [0, 0, 0.07])).event.name == 'COMPLETED'
    # The closed fingertips pushed 2 cm into the cube's top: the cube on the table stops them.
    kin = graph.worker.worker.kinematics.arms['left']
    seed = np.array(graph.state().left.joints)
    solved = kin.ik(cube + [0, 0, 0.0], kin.fk(seed).rotation, seed)
    assert solved.ok
    return graph.run(
        'move_joints', MoveJoints.Goal(arm='left', positions=solved.joints.tolist(), speed=0.3)
    )


def test_pressing_a_held_cube_into_the_table_ends_at_the_force_limit(graph):
    """The arm's stiffness makes 1 cm short of a target behind a rigid obstacle tens of
    newtons: the cube, pinched between the closed fingers, is pressed into the table past the
    limit before the motion could count as blocked."""
    graph.reset()
    r = _press_into_the_cube(graph)
    assert r.event.name == 'FORCE_LIMIT', r.event.detail


def test_blocked_on_the_cube(graph):
    """BLOCKED itself (the motion settled short of its target), with the force watch off."""
    graph.reset()
    engine = graph.skills.skills.engine
    limit, engine.max_contact_force_n = engine.max_contact_force_n, float('inf')
    try:
        r = _press_into_the_cube(graph)
    finally:
        engine.max_contact_force_n = limit
    assert r.event.name == 'BLOCKED', r.event.detail
    assert 'short of its target' in r.event.detail


def test_region_exit(graph):
    graph.reset()
    start = graph.state().left.link6.position
    goal = eef(
        'left',
        (-0.25, 0.05, 0.95),
        use_region=True,
        region_min=[start.x - 0.05, start.y - 0.05, start.z - 0.05],
        region_max=[start.x + 0.05, start.y + 0.05, start.z + 0.05],
    )
    r = graph.run('move_eef', goal)
    assert r.event.name == 'REGION_EXIT', r.event.detail


def test_watch_leaves_its_range(graph):
    graph.reset()
    goal = eef('left', (-0.25, 0.0, 0.85))
    goal.options.watches = [
        WatchMsg(name='stay_high', signal='left_tcp_z', low=0.9, high=2.0, action='stop')
    ]
    r = graph.run('move_eef', goal)
    assert r.event.name == 'GUARD_TRIGGERED' and 'stay_high' in r.event.detail
    assert 'fell below 0.9' in r.event.detail


def test_program_guard_on_gripper_force_fires(graph):
    graph.reset()
    cube = cube_position(graph)
    assert graph.run('move_eef', eef('left', cube + [0, 0, 0.06])).event.name == 'COMPLETED'
    assert graph.run('move_eef', eef('left', cube + [0, 0, -0.008])).event.name == 'COMPLETED'
    graph.stage.guards.add(
        Guard('squeeze', lambda obs: obs.arms['left'].grip_force > 2.0, 'CONTACT')
    )
    goal = Gripper.Goal(arm='left', target=0.0)
    goal.options.reactive = True
    r = graph.run('close_gripper', goal)
    assert r.event.name == 'CONTACT', r.event.detail  # the guard's own event name
    assert 'squeeze' in r.event.detail


def test_until_gives_predicate_satisfied(graph):
    graph.reset()
    graph.stage.until = lambda obs: obs.arms['left'].tcp_position[2] < 0.9
    goal = eef('left', (-0.25, 0.0, 0.82), reactive=True)
    r = graph.run('move_eef', goal)
    assert r.event.name == 'PREDICATE_SATISFIED', r.event.detail
    assert graph.state().left.tcp.position.z < 0.905


@pytest.mark.parametrize(
    'guard,why',
    [
        (lambda obs: time.sleep(0.05) or False, 'budget'),
        (lambda obs: bool(open('/etc/hostname').read()), 'open'),
        (lambda obs: 1 / 0, 'ZeroDivisionError'),
    ],
)
def test_reactive_fault(graph, guard, why):
    graph.reset()
    graph.stage.guards.add(Guard('bad', guard))
    goal = MoveJoints.Goal(arm='left', positions=[0.3, 0.3, 0.3, 0, 0, 0])
    goal.options.reactive = True
    r = graph.run('move_joints', goal)
    assert r.event.name == 'REACTIVE_FAULT'
    assert why in r.event.detail or (why == 'budget' and 'time.sleep' in r.event.detail)


def test_controller_jump_is_shield_rejected_and_the_arm_did_not_move(graph):
    graph.reset()
    before = np.array(graph.state().left.joints)
    graph.stage.controller = lambda obs: {'left': obs.arms['left'].joints + [0.5, 0, 0, 0, 0, 0]}
    goal = RunController.Goal(hz=25.0)
    goal.options.reactive = True
    goal.options.max_seconds = 1.0
    r = graph.run('run_controller', goal)
    assert r.event.name == 'SHIELD_REJECTED'
    assert any('left_joint1 jumps' in reason for reason in r.event.reasons)
    assert r.event.detail.startswith('the shield rejected the command; the arm did not move: ')
    assert np.abs(np.array(graph.state().left.joints) - before).max() < 1e-3


def test_a_rejection_after_accepted_ticks_says_the_arm_moved(graph):
    """The model read "the arm did not move" when the shield refused the last command of a
    motion that had taken the arm most of the way: the detail says the accepted ticks moved
    it."""
    graph.reset()
    before = np.array(graph.state().left.joints)
    ticks = []

    def controller(obs):
        ticks.append(obs.step)
        jump = 0.5 if len(ticks) == 4 else 0.02
        return {'left': obs.arms['left'].joints + [jump, 0, 0, 0, 0, 0]}

    graph.stage.controller = controller
    goal = RunController.Goal(hz=25.0)
    goal.options.reactive = True
    goal.options.max_seconds = 1.0
    r = graph.run('run_controller', goal)
    assert r.event.name == 'SHIELD_REJECTED'
    assert r.event.detail.startswith(
        'the shield rejected the command; it was not applied, and the arm holds where the 3 '
        'accepted ticks before it took it: '
    ), r.event.detail
    assert np.array(graph.state().left.joints)[0] - before[0] > 0.03


def test_episode_ended_at_the_step_limit(graph):
    graph.reset()
    graph.worker.worker.task.step_limit = 40  # this episode only: reach the limit quickly
    graph.stage.controller = lambda obs: {'left_gripper': [1.0]}
    goal = RunController.Goal(hz=25.0)
    goal.options.reactive = True
    goal.options.max_seconds = 10.0
    r = graph.run('run_controller', goal)
    assert r.event.name == 'EPISODE_ENDED', r.event.detail
    assert graph.state().step == 40


def test_home_after_moving_both_arms_in_one_execution(graph):
    graph.reset()
    graph.run('move_joints', MoveJoints.Goal(arm='right', positions=[0.3, 0.4, 0.4, 0, 0, 0]))
    graph.run('move_joints', MoveJoints.Goal(arm='left', positions=[-0.3, 0.5, 0.5, 0, 0, 0]))
    r = graph.run('home', Home.Goal())
    assert r.event.name == 'COMPLETED', r.event.detail
    assert r.arm == 'both' and 'both arms' in r.event.detail
    state = graph.state()
    assert np.abs(np.array([*state.left.joints, *state.right.joints])).max() < 0.02


def test_cancel_stops_the_arm_holding_its_pose(graph):
    graph.reset()
    # Slow (a motion of ~12 s simulated, ~300 ticks): the cancel comes long before its end,
    # however fast the ticks run.
    goal = MoveJoints.Goal(arm='left', positions=[1.2, 1.0, 1.0, 0, 0, 0], speed=0.1)
    goal.options.max_seconds = 30.0
    handle = wait(graph.actions['move_joints'].send_goal_async(goal))
    deadline = time.monotonic() + 60
    while graph.state().step < 8 and time.monotonic() < deadline:
        time.sleep(0.01)
    wait(handle.cancel_goal_async())
    result = wait(handle.get_result_async()).result.execution
    assert result.event.name == 'SKILL_ERROR' and 'cancelled' in result.event.detail
    stopped = np.array(graph.state().left.joints)
    assert 0.0 < stopped[0] < 1.0  # it moved, and it did not reach the target
    # The last command sent holds the arm where it was, not somewhere on the way to the target.
    last = graph.worker.worker.shield.last_accepted
    assert abs(last[0] - stopped[0]) < 0.01


def test_a_controller_is_called_at_its_rate_and_guards_every_tick(graph):
    graph.reset()
    calls, checks = [], []
    graph.stage.controller = lambda obs: calls.append(obs.step) or {}
    graph.stage.guards.add(Guard('count', lambda obs: checks.append(obs.step) and False))
    goal = RunController.Goal(hz=5.0)
    goal.options.reactive = True
    goal.options.max_seconds = 2.0
    r = graph.run('run_controller', goal)
    assert r.event.name == 'TIMEOUT'
    assert len(checks) == 50 and len(calls) == 10  # 2 s: guards at 25 Hz, the controller at 5
    assert all(b - a == 5 for a, b in zip(calls, calls[1:], strict=False))


@pytest.mark.parametrize('hz', [0.0, -1.0, 26.0])
def test_a_controller_rate_outside_its_range_is_refused(graph, hz):
    """hz is in (0, control_hz]: 0 was taken as every tick, which the docstring never said."""
    graph.reset()
    graph.stage.controller = lambda obs: {}
    goal = RunController.Goal(hz=hz)
    goal.options.reactive = True
    r = graph.run('run_controller', goal)
    assert r.event.name == 'SKILL_ERROR' and 'hz must be in (0, 25]' in r.event.detail


@pytest.mark.parametrize('hz', [10.0, 7.0, 25.0, 3.0])
def test_a_controller_runs_at_its_exact_average_rate(graph, hz):
    """hz=10 ran 25 times in 2 s (12.5 Hz: the period rounded to whole ticks): the rate is
    now exact on average, each call on the tick where its 1/hz s falls."""
    graph.reset()
    calls = []
    graph.stage.controller = lambda obs: calls.append(obs.step) or {}
    goal = RunController.Goal(hz=hz)
    goal.options.reactive = True
    goal.options.max_seconds = 2.0
    assert graph.run('run_controller', goal).event.name == 'TIMEOUT'
    assert len(calls) == int(2.0 * hz)
    gaps = {b - a for a, b in zip(calls, calls[1:], strict=False)}
    assert gaps <= {math.floor(25 / hz), math.ceil(25 / hz)}


def test_a_right_arm_controller_leaving_its_region_ends_with_region_exit(graph):
    graph.reset()
    start = graph.state().right.link6.position
    graph.stage.controller = lambda obs: {'right': obs.right.joints + [0.03, 0, 0, 0, 0, 0]}
    goal = RunController.Goal(hz=25.0)
    goal.options.reactive = True
    goal.options.max_seconds = 3.0
    goal.options.use_region = True
    goal.options.region_min = [start.x - 0.05, start.y - 0.05, start.z - 0.05]
    goal.options.region_max = [start.x + 0.05, start.y + 0.05, start.z + 0.05]
    r = graph.run('run_controller', goal)
    assert r.event.name == 'REGION_EXIT' and r.event.detail.startswith('right link6')


def test_a_guard_opens_the_gripper_of_the_arm_the_controller_commands(graph):
    graph.reset()
    graph.run('close_gripper', Gripper.Goal(arm='right', target=0.0))
    graph.run('close_gripper', Gripper.Goal(arm='left', target=0.0))
    graph.stage.controller = lambda obs: {'right_gripper': [0.0]}
    graph.stage.guards.add(Guard('soon', lambda obs: obs.step > 40, 'open_gripper'))
    goal = RunController.Goal(hz=25.0)
    goal.options.reactive = True
    goal.options.max_seconds = 3.0
    r = graph.run('run_controller', goal)
    assert r.event.name == 'GUARD_TRIGGERED'
    state = graph.state()
    assert state.right.gripper > 0.5 and state.left.gripper < 0.2


def test_a_built_in_until_gives_predicate_satisfied(graph):
    graph.reset()
    goal = eef('left', (-0.25, 0.0, 0.82))
    goal.options.until = [WatchMsg(name='low', signal='left_tcp_z', low=0.9, high=2.0)]
    r = graph.run('move_eef', goal)
    assert r.event.name == 'PREDICATE_SATISFIED' and 'fell below 0.9' in r.event.detail


def test_an_unknown_signal_is_a_skill_error(graph):
    graph.reset()
    goal = eef('left', (-0.25, 0.0, 0.9))
    goal.options.watches = [WatchMsg(name='x', signal='left_elbow', low=0.0, high=1.0)]
    r = graph.run('move_eef', goal)
    assert r.event.name == 'SKILL_ERROR' and "unknown signal 'left_elbow'" in r.event.detail
