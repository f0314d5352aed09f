"""The workspace smoke check: two real nodes, a service and an action round trip.

It proves the ROS middleware, the generated `harness_msgs` types and the executor set-up work
on this machine before anything bigger starts.
"""

import threading
import time
from dataclasses import dataclass

import rclpy
from harness_types.process import leave_graph
from harness_types.wait import wait_future
from rclpy.action import ActionClient, ActionServer
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from harness_msgs.action import MoveJoints
from harness_msgs.msg import Event
from harness_msgs.srv import State


@dataclass
class SmokeResult:
    service_ms: float
    action_ms: float
    step_echo: int
    event: str


class SmokeServer(Node):
    """Answers `State` with a fixed step and completes every `MoveJoints` goal."""

    STEP = 42

    def __init__(self, context: rclpy.Context) -> None:
        super().__init__('smoke_server', context=context)
        group = ReentrantCallbackGroup()
        self.create_service(State, 'smoke/state', self._state, callback_group=group)
        ActionServer(
            self,
            MoveJoints,
            'smoke/move_joints',
            self._move,
            callback_group=group,
            result_timeout=10,
        )

    def _state(self, _request: State.Request, response: State.Response) -> State.Response:
        response.state.step = self.STEP
        response.state.left.name = 'left'
        response.state.right.name = 'right'
        return response

    def _move(self, goal_handle) -> MoveJoints.Result:
        for tick in range(3):
            feedback = MoveJoints.Feedback(tick=tick, progress=(tick + 1) / 3)
            goal_handle.publish_feedback(feedback)
        goal_handle.succeed()
        result = MoveJoints.Result()
        result.execution.event = Event(
            name=Event.COMPLETED, skill='move_joints', detail=f'moved {goal_handle.request.arm}'
        )
        result.execution.skill = 'move_joints'
        return result


def run_smoke(domain_id: int, timeout_s: float = 10.0) -> SmokeResult:
    """Start a server node and a client node in one process and do both round trips."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain_id)
    executor = MultiThreadedExecutor(num_threads=2, context=context)
    nodes, spin = [], None
    try:
        server = SmokeServer(context)
        nodes.append(server)
        client = Node('smoke_client', context=context)
        nodes.append(client)
        # built before the executor spins its node: rclpy's ActionClient joins the node's
        # waitables before it makes its lock (station_graph.spun_action_client)
        action_client = ActionClient(client, MoveJoints, 'smoke/move_joints')
        executor.add_node(server)
        executor.add_node(client)
        spin = threading.Thread(target=executor.spin, daemon=True)
        spin.start()

        state_client = client.create_client(State, 'smoke/state')
        if not state_client.wait_for_service(timeout_sec=timeout_s):
            raise TimeoutError('smoke/state service did not appear')
        t0 = time.perf_counter()
        response = wait_future(state_client.call_async(State.Request()), timeout_s)
        service_ms = (time.perf_counter() - t0) * 1e3

        if not action_client.wait_for_server(timeout_sec=timeout_s):
            raise TimeoutError('smoke/move_joints action did not appear')
        t0 = time.perf_counter()
        goal = MoveJoints.Goal(arm='left', positions=[0.0] * 6)
        goal.options.max_seconds = 1.0
        handle = wait_future(action_client.send_goal_async(goal), timeout_s)
        if not handle.accepted:
            raise RuntimeError('smoke goal was rejected')
        result = wait_future(handle.get_result_async(), timeout_s).result
        action_ms = (time.perf_counter() - t0) * 1e3
        return SmokeResult(service_ms, action_ms, response.state.step, result.execution.event.name)
    finally:
        executor.shutdown()
        if spin is not None:
            spin.join(timeout=2.0)
        leave_graph(nodes, context)
