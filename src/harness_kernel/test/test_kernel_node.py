"""Integration: the kernel node in its own process with the worker and skill server; the
program in its sandboxed process reaches the robot only through the kernel."""

import json
import time
from pathlib import Path

import pytest
from conftest import KernelSession
from harness_bringup.station_graph import StationGraph

from harness_types import names


@pytest.fixture(scope='module')
def kernel(tmp_path_factory):
    root = tmp_path_factory.mktemp('kernel')
    params = root / 'params.yaml'
    params.write_text('kernel:\n  ros__parameters:\n    cell_timeout_seconds: 8.0\n')
    with StationGraph('driver_stand_in') as graph:
        token = graph.reset('lift_cube').token
        session = KernelSession(
            graph, root / 'workspace', root / 'kernel.log', ['--params-file', str(params)]
        )
        try:
            yield session.run, root / 'workspace', root / 'kernel.log', token, graph
        finally:
            session.stop()


def test_a_program_moves_the_arm_and_variables_persist(kernel):
    run, _, log, *_ = kernel
    r = run(
        's0 = state()\nr = move_joints([0.2, 0.3, 0.3, 0, 0, 0], arm="left")\n'
        'print(r.event, r.ok, len(r.trace) > 0)'
    )
    assert r.status == 'ok', r.traceback
    assert 'COMPLETED True True' in r.output
    assert len(r.executions) == 1 and r.executions[0].event == 'COMPLETED'
    r = run('print(round(state().left.joints[0] - s0.left.joints[0], 2))')
    assert r.output.strip() == '0.2'
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    calls = [e['call'] for e in entries if 'call' in e and e['call'] != '(kernel)']
    assert calls[:2] == ['state', 'move_joints']
    assert any(e.get('execution') == 'move_joints' for e in entries)


def test_escalation_carries_the_event_and_trace(kernel):
    run, *_ = kernel
    r = run('move_eef([-0.3, 0.7, 0.9], arm="left")')
    assert r.status == 'escalated' and r.stopped_by.event == 'SKILL_ERROR'
    assert 'cannot reach' in r.stopped_by.detail
    # a position that is not finite is said with its numbers (it had said "got (3,)")
    r = run('move_eef([float("nan"), 0, 1.0], arm="left")')
    assert r.status == 'escalated' and r.stopped_by.event == 'SKILL_ERROR'
    assert 'a position of 3 finite numbers, got [nan, 0.0, 1.0]' in r.stopped_by.detail


def test_a_guard_through_the_skill_server(kernel):
    run, *_ = kernel
    r = run(
        'when(lambda obs: obs.arms["left"].joints[0] > 0.1, "TURNED", name="turned")\n'
        'move_joints([0.5, 0.3, 0.3, 0, 0, 0], arm="left")'
    )
    assert r.status == 'escalated' and r.stopped_by.event == 'TURNED'
    r = run(
        'def stuck(obs):\n    while True:\n        pass\n'
        'clear_guards()\nwhen(stuck, name="stuck")\nmove_joints([0.0, 0.3, 0.3, 0, 0, 0])'
    )
    assert r.status == 'escalated' and r.stopped_by.event == 'REACTIVE_FAULT'
    assert run('clear_guards()\nprint("usable")').output.strip() == 'usable'


def test_a_controllers_cameras_arrive_in_obs_images_and_an_unknown_one_is_refused(kernel):
    run, *_ = kernel
    r = run(
        'seen = []\n'
        'r = run_controller(lambda obs: seen.append(obs.images["cam_head"].rgb.shape),\n'
        '                   until=lambda obs: len(seen) >= 2, cameras=["cam_head"])\n'
        'print(r.event, seen[0])\n'
        'on("SKILL_ERROR", lambda e: True)\n'
        'print(run_controller(lambda obs: None, cameras=["cam_head", "cam_nope"]).detail)'
    )
    assert r.status == 'ok', r.traceback
    first, refused = r.output.strip().splitlines()
    assert first.startswith('PREDICATE_SATISFIED (') and first.endswith(', 3)')
    assert refused == "no camera 'cam_nope'; cameras: cam_head, cam_left_wrist, cam_right_wrist"


def test_the_program_has_no_ros_and_no_token(kernel):
    run, _, _, token, _ = kernel
    r = run('outcome("x")')
    assert r.status == 'error' and "name 'outcome' is not defined" in r.traceback
    r = run('import os\nprint(any(v for v in os.environ.values() if len(v) == 32))')
    assert token not in r.output
    program = """
import rclpy
from rclpy.node import Node
ctx = rclpy.Context()
rclpy.init(context=ctx)
n = Node('sneaky', context=ctx)
print('NODE')
"""
    r = run(program)
    assert 'NODE' not in r.output and r.status == 'error'


def test_printing_10_mb_and_an_endless_cell(kernel):
    run, *_ = kernel
    r = run('print("y" * 10_000_000)')
    assert r.status == 'ok' and len(r.output) < 8100
    r = run('while True:\n    pass')
    assert r.status == 'error' and 'cell_timeout_seconds' in r.traceback
    assert run('print("after")').output.strip() == 'after'


def test_the_wrap_up_ignores_the_programs_guards(kernel):
    run, *_ = kernel
    r = run(
        'clear_guards()\nmove_joints([0.3, 0.4, 0.4, 0, 0, 0], arm="left")\n'
        'close_gripper("left")\nwhen(lambda obs: True, "ALWAYS", name="always")'
    )
    assert r.status == 'ok', r.traceback
    r = run('', wrap_up=True)
    assert r.status == 'ok', r.output
    assert 'guards, controllers and handlers do not apply' in r.output
    assert [e.skill for e in r.executions] == ['open_gripper', 'open_gripper', 'home']
    r = run(
        's = state()\nprint(round(max(abs(v) for v in s.left.joints), 2), s.left.gripper > 0.8)'
    )
    assert r.output.split() == ['0.0', 'True']


def test_finish_and_show(kernel):
    run, *_ = kernel
    r = run('clear_guards()\nshow("cam_head", "the table")\nfinish("done here")')
    assert r.status == 'finished' and r.summary == 'done here'
    assert r.images[0].caption == 'the table' and r.images[0].rgb.shape == (480, 640, 3)


def test_located_objects_and_regions_are_shown_in_rviz(kernel):
    import time

    from visualization_msgs.msg import Marker, MarkerArray

    run, *_, graph = kernel
    shown = []
    graph.client.create_subscription(MarkerArray, '/harness/markers', shown.append, 50)
    time.sleep(0.5)  # the subscription is matched before the cell publishes
    r = run(
        'cube = locate("cube")[0]\n'
        'p = state().left.tcp\n'
        'move_eef([p[0], p[1], p[2] + 0.03], arm="left", region=([-1, -1, 0.7], [1, 1, 1.6]))'
    )
    assert r.status == 'ok', r.traceback
    deadline = time.monotonic() + 10
    while len(shown) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    markers = [m for array in shown for m in array.markers]
    located = [m for m in markers if m.ns == 'located' and m.type == Marker.TEXT_VIEW_FACING]
    assert located and located[0].text.startswith('red_cube')
    regions = [m for m in markers if m.ns == 'regions']
    # Shown while the execution runs, deleted when it ends.
    assert [m.action for m in regions] == [Marker.ADD, Marker.DELETE]
    assert regions[0].type == Marker.LINE_LIST and abs(regions[0].scale.x - 0.004) < 1e-9


def test_the_skill_servers_read_services_are_served_and_called_on_lanes(kernel):
    # Off the executors: a skills/ik round trip cost ~7 ms through them, ~2 ms on lanes.
    *_, graph = kernel
    services = ('state', 'observe', 'ik', 'predict')
    lanes = {
        names.lane_node(owner, s) for owner in (names.SKILL_SERVER, names.KERNEL) for s in services
    }
    deadline = time.monotonic() + 10.0
    while not lanes <= set(graph.client.get_node_names()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert lanes <= set(graph.client.get_node_names())
    run, *_ = kernel
    assert run('print(state().step >= 0)').output.strip() == 'True'


class _Future:
    def __init__(self, value=None, done=False):
        self.value, self._done, self.callbacks = value, done, []

    def done(self):
        return self._done

    def result(self):
        return self.value

    def add_done_callback(self, fn):
        self.callbacks.append(fn)


class _Handle:
    """A goal whose first result response was lost: the server says it ended (status), and a
    second request for its result is answered."""

    def __init__(self, status, answer=None):
        from action_msgs.msg import GoalStatus

        self.status, self.requests = status, 0
        self.answer = GoalStatus.STATUS_SUCCEEDED if answer is None else answer

    def get_result_async(self):
        from types import SimpleNamespace

        from action_msgs.msg import GoalStatus

        self.requests += 1
        status = self.answer if self.requests > 1 else GoalStatus.STATUS_SUCCEEDED
        return _Future(SimpleNamespace(result='the result', status=status), self.requests > 1)


class _Pump:
    def serve(self, wait_s):
        import time

        time.sleep(min(wait_s, 0.01))

    def wake(self):
        pass


def test_a_lost_result_is_asked_for_again_and_a_wait_is_bounded(monkeypatch):
    """A transfer cell hung for its whole time: the motion ended on the skill server and the
    kernel waited for a result that never came. A goal the server says has ended is asked
    for its result again; a wait that still gets nothing ends at the execution's bound."""
    from action_msgs.msg import GoalStatus

    from harness_kernel import kernel_node

    monkeypatch.setattr(kernel_node, 'RESULT_CHECK_S', 0.05)
    ended = _Handle(GoalStatus.STATUS_SUCCEEDED)
    assert kernel_node.RosRobot._result(ended, 5.0, _Pump()) == 'the result'
    assert ended.requests == 2
    running = _Handle(GoalStatus.STATUS_EXECUTING)
    with pytest.raises(TimeoutError):
        kernel_node.RosRobot._result(running, 0.3, _Pump())
    assert running.requests == 1  # a goal still running is not asked again
    expired = _Handle(GoalStatus.STATUS_SUCCEEDED, answer=GoalStatus.STATUS_UNKNOWN)
    with pytest.raises(RuntimeError, match='no longer had the result'):
        kernel_node.RosRobot._result(expired, 5.0, _Pump())
    assert kernel_node.result_bound(2.0, 720.0) == 50.0
    assert kernel_node.result_bound(0.0, 720.0) == 720.0  # unset: the cell's bound


def test_a_warm_kernels_requests_are_answered_one_line_each():
    """The warm station's control socket: prepare, begin and end reach the node in order, an
    unknown request or one that fails is answered with why, and the socket's end stops the
    kernel."""
    import socket
    import threading
    from pathlib import Path
    from types import SimpleNamespace

    from harness_kernel.kernel_node import serve_control

    calls = []

    class Node:
        kernel = None
        stuck = False  # a cell of the ended episode still runs

        def prepare(self, workspace):
            calls.append(('prepare', workspace))

        def begin(self, workspace, log):
            if workspace == Path('/bad'):
                raise RuntimeError('the program process did not start')
            calls.append(('begin', workspace, log))
            self.kernel = SimpleNamespace(host=SimpleNamespace(pid=4242))
            return {'uid': 61256}

        def end(self, wait_s=0.0):
            calls.append(('end',))
            return 'a cell of the ended episode still runs' if self.stuck else ''

    ours, theirs = socket.socketpair()
    stopping = threading.Event()
    node = Node()
    thread = threading.Thread(target=serve_control, args=(node, theirs, stopping))
    thread.start()
    lines = ours.makefile('r')

    def ask(request: dict) -> dict:
        ours.sendall((json.dumps(request) + '\n').encode())
        return json.loads(lines.readline())

    assert ask({'op': 'prepare', 'workspace': '/w1'}) == {'ok': True}
    assert ask({'op': 'begin', 'workspace': '/w1', 'log': '/run/kernel.log'}) == {
        'ok': True,
        'sandbox': {'uid': 61256},
        'pid': 4242,
    }
    assert ask({'op': 'end'}) == {'ok': True}
    # a kernel whose ended episode's cell still runs says so: the station serves no more
    node.stuck = True
    assert ask({'op': 'end'}) == {'ok': False, 'error': 'a cell of the ended episode still runs'}
    assert ask({'op': 'reboot'}) == {'ok': False, 'error': "no such request: 'reboot'"}
    failed = ask({'op': 'begin', 'workspace': '/bad'})
    assert failed == {'ok': False, 'error': 'RuntimeError: the program process did not start'}
    assert ask({'op': 'prepare'})['error'].startswith('KeyError')
    assert calls == [
        ('prepare', Path('/w1')),
        ('begin', Path('/w1'), Path('/run/kernel.log')),
        ('end',),
        ('end',),
    ]
    lines.close()  # (a file made of a socket keeps it open)
    ours.close()
    thread.join(timeout=5)
    assert stopping.is_set() and not thread.is_alive()


def test_an_episode_ends_once_its_cells_have_returned():
    """KernelNode.end waits for the ended episode's cells (its program process is killed
    first); a cell that is still running when the wait is over is said, not ignored."""
    import threading
    from types import SimpleNamespace

    from harness_kernel.kernel_node import KernelNode
    from harness_types.wait import InFlight

    def node(cells: int):
        in_flight = InFlight()
        for _ in range(cells):  # cells running on it
            in_flight.__enter__()
        fake = SimpleNamespace(kernel=None, _close_log=lambda: None, _cells=in_flight, refusal='')
        fake.end = lambda wait_s=0.0: KernelNode.end(fake, wait_s)
        return fake

    assert KernelNode.end(node(0), 0.0) == ''
    stuck = node(1)
    assert 'still run' in KernelNode.end(stuck, 0.05)
    # and remembers it: no program process is prepared or begun in this kernel again
    for refused in (
        lambda: KernelNode.prepare(stuck, Path('/w')),
        lambda: KernelNode.begin(stuck, Path('/w'), None),
    ):
        with pytest.raises(RuntimeError, match='still run'):
            refused()
    returning = node(1)

    def cell_returns() -> None:
        returning._cells.__exit__(None, None, None)

    threading.Timer(0.05, cell_returns).start()
    assert KernelNode.end(returning, 10.0) == ''
