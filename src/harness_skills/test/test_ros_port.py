"""RosReactivePort reuses one request per thread: each tick's request carries that tick's state
and only the views due at that tick. RosStationPort calls a worker in another participant (as
under `ros2 launch`) on its lanes."""

import threading
import time

import numpy as np
import pytest
import rclpy
from harness_bringup.domain import claim_domain_id
from harness_skills.ros_port import RosReactivePort, RosStationPort, ServiceError
from harness_types.robot_state import ArmState, RobotState
from harness_worker.worker_node import WorkerNode
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from harness_msgs.msg import CameraView
from harness_msgs.srv import ReactiveStep


class RecordingLane:
    srv_name = '/kernel/reactive_step'

    def __init__(self) -> None:
        self.sent: list[tuple[int, list[str]]] = []

    def call(self, request, timeout):
        self.sent.append((request.state.step, [v.name for v in request.views]))
        return ReactiveStep.Response()


class OneViewStation:
    def __init__(self, success: bool = True) -> None:
        self.success = success

    def call(self, service, request):
        assert service == 'observe' and list(request.cameras) == ['cam_head']
        views = [CameraView(name='cam_head')] if self.success else []
        message = '' if self.success else 'no renderer'
        return type('Observed', (), {'views': views, 'success': self.success, 'message': message})()


def state(step: int) -> RobotState:
    def arm(name):
        return ArmState(name, np.zeros(6), 1.0, np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3))

    return RobotState(arm('left'), arm('right'), step, step * 0.04)


def test_a_reused_request_sends_views_only_on_the_ticks_they_are_due():
    lane = RecordingLane()
    port = RosReactivePort(lane, OneViewStation(), timeout=1.0)
    port.use_cameras(['cam_head'], every=2)
    for step, controller in ((1, True), (2, False), (3, True), (4, True), (5, True)):
        assert not port.step('e1', 'move_eef', state(step), controller).fault
    # Controller calls 1, 3, 4, 5: views with the 1st and 3rd of them (every=2).
    assert lane.sent == [
        (1, ['cam_head']),
        (2, []),
        (3, []),
        (4, ['cam_head']),
        (5, []),
    ]


def test_views_that_cannot_be_rendered_are_a_fault_not_an_empty_obs_images():
    lane = RecordingLane()
    port = RosReactivePort(lane, OneViewStation(success=False), timeout=1.0)
    port.use_cameras(['cam_head'], every=1)
    assert port.step('e1', 'run_controller', state(1), True).fault == 'worker/observe: no renderer'
    assert lane.sent == []  # the controller was not called without its views


def spun(node: Node) -> MultiThreadedExecutor:
    executor = MultiThreadedExecutor(context=node.context)
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    return executor


def test_the_port_calls_a_worker_of_another_participant_on_its_lanes():
    """The worker's node and the port's node each in a context of its own (a DDS participant
    each, as in two processes): tick, state, fk and ik go over the worker's lanes and answer
    what its core says, a rejection included; a worker that leaves is said, not waited on."""
    claim = claim_domain_id()
    contexts = [rclpy.Context(), rclpy.Context()]
    for context in contexts:
        rclpy.init(context=context, domain_id=claim.domain_id)
    worker = WorkerNode(context=contexts[0])
    worker_executor = spun(worker)
    client = Node('port_test', context=contexts[1])
    client_executor = spun(client)
    port = RosStationPort(client, timeout=10.0)
    destroyed = False
    try:
        worker.worker.reset('lift_cube', 0, 0)
        state = port.observe_state()
        assert state.step == 0
        assert np.array_equal(state.measured, worker.worker.measured())
        ticked = port.tick(state.measured)
        assert ticked.accepted and ticked.observation.step == 1 == worker.worker.step
        left = ticked.observation.left
        assert np.allclose(port.tcp_of('left', left.joints), left.tcp_position, atol=1e-9)
        solved = port.ik('left', left.tcp_position, left.tcp_quat, left.joints)
        assert solved.ok and np.allclose(solved.joints, left.joints, atol=1e-3)
        jump = ticked.observation.measured
        jump[0] += 1.0
        rejected = port.tick(jump)
        assert not rejected.accepted and rejected.reasons and worker.worker.step == 1
        lanes = {'worker_tick', 'worker_state', 'worker_fk', 'worker_ik'}
        callers = {f'port_test_worker_{s}' for s in ('tick', 'state', 'fk', 'ik')}
        deadline = time.monotonic() + 10.0  # node names travel after the endpoints
        while not lanes | callers <= set(client.get_node_names()):
            assert time.monotonic() < deadline, sorted(client.get_node_names())
            time.sleep(0.05)

        worker_executor.shutdown()
        worker.destroy_node()  # its lanes close with it
        destroyed = True
        with pytest.raises(ServiceError, match='worker/tick'):
            port.tick(ticked.observation.measured)
    finally:
        port.close()
        client_executor.shutdown()
        worker_executor.shutdown()
        if not destroyed:
            worker.destroy_node()
        worker.worker.close()
        for context in contexts:
            rclpy.try_shutdown(context=context)
        claim.release()
