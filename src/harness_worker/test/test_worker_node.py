"""Integration: a client node drives the worker node over ROS services to lift the cube."""

import threading
import time

import numpy as np
import pytest
import rclpy
from geometry_msgs.msg import Point, Quaternion
from harness_bringup.domain import claim_domain_id
from harness_testing.scripted_motion import joint_steps
from harness_types.transforms import matrix_to_quat, quat_to_matrix, tool_rotation
from harness_worker.worker_node import WorkerNode
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from visualization_msgs.msg import Marker, MarkerArray

from harness_msgs.msg import Command
from harness_msgs.srv import Ik, Observe, Outcome, Profile, Reset, Tick


def call(client, request, timeout=30.0):
    future = client.call_async(request)
    deadline = time.monotonic() + timeout
    while not future.done():
        assert time.monotonic() < deadline, f'{client.srv_name} did not answer'
        time.sleep(0.0005)
    return future.result()


@pytest.fixture(scope='module')
def graph():
    claim = claim_domain_id()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=claim.domain_id)
    worker = WorkerNode(context=context)
    client = Node('test_client', context=context)
    executor = MultiThreadedExecutor(num_threads=2, context=context)
    executor.add_node(worker)
    executor.add_node(client)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    clients = {
        name: client.create_client(kind, f'/worker/{name}')
        for name, kind in [
            ('reset', Reset),
            ('tick', Tick),
            ('ik', Ik),
            ('outcome', Outcome),
            ('observe', Observe),
            ('profile', Profile),
        ]
    }
    for c in clients.values():
        assert c.wait_for_service(timeout_sec=10.0)
    yield client, clients, worker
    executor.shutdown()
    worker.worker.close()  # its renderers freed on their GL thread, not by the collector
    rclpy.shutdown(context=context)
    claim.release()


def quat(rotation):
    q = matrix_to_quat(rotation)
    return Quaternion(w=q[0], x=q[1], y=q[2], z=q[3])


def ik(clients, position, seed):
    for degrees in range(90, 25, -5):
        request = Ik.Request(
            arm='left',
            position=Point(x=position[0], y=position[1], z=position[2]),
            orientation=quat(tool_rotation(np.radians(degrees))),
            use_orientation=True,
            seed=list(seed),
        )
        response = call(clients['ik'], request)
        if response.success:
            return np.array(response.joints)
    raise AssertionError(f'no IK for {position}')


def measured(state):
    return np.array(
        [*state.left.joints, state.left.gripper, *state.right.joints, state.right.gripper]
    )


def drive(clients, state, goal, gripper, settle=5):
    command = measured(state)
    targets = joint_steps(command[:6], goal)
    for target in targets + [targets[-1]] * settle:
        command[:6] = target
        command[6] = gripper
        response = call(clients['tick'], Tick.Request(command=Command(positions=command.tolist())))
        if not response.accepted and response.reasons == ['episode ended: the task succeeded']:
            return state  # the lift succeeded: the episode is over
        assert response.accepted, response.reasons
        state = response.state
    return state


def test_lift_cube_over_ros_and_a_rejected_jump(graph):
    node, clients, worker = graph
    joint_states, markers = [], []
    node.create_subscription(JointState, '/joint_states', joint_states.append, 10)
    node.create_subscription(MarkerArray, '/harness/markers', markers.append, 10)
    profile = call(clients['profile'], Profile.Request())
    assert profile.kind == 'robot' and len(profile.command_layout) == 14
    before = dict(worker.state_messages_published)
    assert list(before) == ['/joint_states', '/tf', '/clock']
    reset = call(clients['reset'], Reset.Request(task='lift_cube', layout=0, seed=0))
    assert reset.success, reset.message
    refused = call(clients['reset'], Reset.Request(task='lift_cube', layout=0, seed=0))
    assert not refused.success and 'token' in refused.message
    assert not call(clients['outcome'], Outcome.Request(token='')).accepted

    # A 0.5 rad jump is rejected with a reason; the simulator did not advance.
    jump = measured(reset.state)
    jump[0] += 0.5
    rejected = call(clients['tick'], Tick.Request(command=Command(positions=jump.tolist())))
    assert not rejected.accepted
    assert any('left_joint1 jumps' in r for r in rejected.reasons)
    assert rejected.state.step == 0 and rejected.state.sim_time == 0.0
    # rviz shows where: a marker at the left TCP, with the reason.
    deadline = time.monotonic() + 10
    while not markers and time.monotonic() < deadline:
        time.sleep(0.01)
    shown = [m for m in markers[0].markers if m.ns == 'shield_rejections']
    assert [m.type for m in shown] == [Marker.SPHERE, Marker.TEXT_VIEW_FACING]
    tcp = reset.state.left.tcp.position
    assert np.allclose([shown[0].pose.position.x, shown[0].pose.position.y], [tcp.x, tcp.y])
    assert shown[1].text.startswith('left: ') and 'left_joint1 jumps' in shown[1].text
    short = call(clients['tick'], Tick.Request(command=Command(positions=[0.0] * 13)))
    assert not short.accepted and '13 numbers' in short.reasons[0]

    # Locate the cube from the head camera's segmentation and depth (no ground truth).
    view = call(
        clients['observe'], Observe.Request(cameras=['cam_head'], depth=True, segmentation=True)
    ).views[0]
    seg = np.frombuffer(bytes(view.segmentation.data), np.int32).reshape(
        view.segmentation.height, -1
    )
    depth = np.frombuffer(bytes(view.depth.data), np.float32).reshape(view.depth.height, -1)
    ys, xs = np.nonzero(seg == view.labels.index('red cube'))
    k = view.info.k
    z = float(np.median(depth[ys, xs]))
    ray = np.array([(xs.mean() - k[2]) / k[0], (ys.mean() - k[5]) / k[4], 1.0]) * z
    o = view.pose.orientation
    rot = quat_to_matrix([o.w, o.x, o.y, o.z])
    p = view.pose.position
    surface = np.array([p.x, p.y, p.z]) + rot @ ray
    cube = np.array([surface[0], surface[1], 0.765 + 0.02])  # 4 cm cube on the table top

    state = reset.state
    q = ik(clients, cube + [0, 0, 0.06], state.left.joints)
    state = drive(clients, state, q, 1.0)
    q = ik(clients, cube + [0, 0, -0.008], q)
    state = drive(clients, state, q, 1.0)
    state = drive(clients, state, q, 0.0, settle=15)
    q = ik(clients, cube + [0, 0, 0.16], q)
    state = drive(clients, state, q, 0.0)

    outcome = call(clients['outcome'], Outcome.Request(token=reset.token))
    assert outcome.accepted and outcome.success, outcome.detail
    # One state published for the reset and for each accepted tick, none for the rejected: on
    # /clock always, on /joint_states (listened to here) too, on /tf (nobody listens) never.
    published = {t: n - before[t] for t, n in worker.state_messages_published.items()}
    assert published == {'/joint_states': state.step + 1, '/tf': 0, '/clock': state.step + 1}
    assert joint_states and len(joint_states[-1].name) == 16
    # The second finger is the URDF's mimic of the first in every message (what a reader of
    # the URDF, robot_state_publisher, computes), also while the fingers grip the cube.
    for message in joint_states:
        position = dict(zip(message.name, message.position, strict=True))
        for arm in ('left', 'right'):
            assert position[f'{arm}_gripper_mimic'] == position[f'{arm}_gripper']


def test_a_failing_handler_answers_with_the_error_and_the_node_serves_on(graph, monkeypatch):
    _, clients, worker = graph

    def broken(*args, **kwargs):
        raise RuntimeError('a bug in the core')

    monkeypatch.setattr(worker.worker, 'ik', broken)
    r = call(clients['ik'], Ik.Request(arm='left', position=Point(x=0.0, y=-0.3, z=1.0)))
    assert not r.success
    assert r.message == 'the worker failed: RuntimeError: a bug in the core'
    assert call(clients['profile'], Profile.Request()).kind == 'robot'


def test_tick_local_answers_as_the_service_does(monkeypatch):
    """The skill server beside the worker ticks it without messages: the same checks, the same
    refusals, a refusal (not an exception) when the core fails."""
    claim = claim_domain_id()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=claim.domain_id)
    try:
        worker = WorkerNode(context=context)
        refused = worker.tick_local(np.zeros(14))
        assert not refused.accepted and refused.reasons == ['no episode: call reset first']
        worker.worker.reset('lift_cube', 0, 0)
        short = worker.tick_local(np.zeros(13))
        assert not short.accepted and '13 numbers' in short.reasons[0]
        state = worker.worker.state()
        result = worker.tick_local(state.measured)
        assert result.accepted and result.state.step == state.step + 1

        def broken(*args, **kwargs):
            raise RuntimeError('boom')

        monkeypatch.setattr(worker.worker, 'tick', broken)
        failed = worker.tick_local(state.measured)
        assert not failed.accepted and failed.reasons == ['the worker failed: RuntimeError: boom']
        assert failed.state.step == 0  # the empty state the service's refusal carries
        worker.worker.close()
        worker.destroy_node()
    finally:
        rclpy.shutdown(context=context)
        claim.release()


def same_state(a, b) -> bool:
    """Every field of two RobotStates equal (arrays element by element)."""
    if (a.step, a.time) != (b.step, b.time):
        return False
    for arm_a, arm_b in zip(a.arms.values(), b.arms.values(), strict=True):
        for field in arm_a.__dataclass_fields__:
            x, y = getattr(arm_a, field), getattr(arm_b, field)
            if not np.array_equal(np.asarray(x), np.asarray(y)):
                return False
    return True


def test_state_local_is_the_state_the_service_answers():
    """The skill server beside the worker reads the state without the message and back: the
    same numbers (every field is float64), the empty state before an episode."""
    from harness_types.convert import robot_state_of

    from harness_msgs.srv import State

    claim = claim_domain_id()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=claim.domain_id)
    try:
        worker = WorkerNode(context=context)
        # The per-tick topics the recorder records keep as many messages as it queues
        # (recorder_node.subscription_qos): a recorder a loaded machine held back lost all but
        # the last ticks of a history of 10.
        from harness_types import names

        for publisher in (worker.joint_states, worker.tf, worker.clock):
            assert publisher.qos_profile.depth == names.RECORDED_DEPTH

        def served():
            return robot_state_of(worker.call_local('state', State.Request()).state)

        assert same_state(worker.state_local(), served())
        worker.worker.reset('lift_cube', 0, 0)
        start = worker.worker.state().measured
        goal = start.copy()
        goal[1], goal[6] = 0.6, 0.0  # the left shoulder down, its gripper closing
        for command in joint_steps(start, goal, 0.05):
            assert worker.tick_local(command).accepted
            assert same_state(worker.state_local(), served())
        worker.worker.close()
        worker.destroy_node()
    finally:
        rclpy.shutdown(context=context)
        claim.release()


def test_each_episode_numbers_its_shield_rejection_markers_from_zero():
    """A warm station's next episode publishes the markers a new station would: the ids of its
    shield rejections' markers start again at 0 (the bag records them)."""
    claim = claim_domain_id()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=claim.domain_id)
    try:
        worker = WorkerNode(context=context)
        shown = []
        worker.markers.publish = shown.append  # what the worker publishes, as it publishes it
        token = ''
        for _ in range(2):
            reset = Reset.Response()
            worker._reset(Reset.Request(task='lift_cube', layout=0, seed=0, token=token), reset)
            assert reset.success, reset.message
            token = reset.token
            jump = worker.worker.measured()
            jump[0] += 0.5
            assert not worker.tick_local(jump).accepted
        ids = [[m.id for m in array.markers if m.ns == 'shield_rejections'] for array in shown]
        assert len(ids) == 2 and ids[0] == ids[1], ids
        worker.worker.close()
        worker.destroy_node()
    finally:
        rclpy.shutdown(context=context)
        claim.release()
