"""The station side of an episode in this process: worker and skill server on one executor in
a private ROS domain, plus a client node. The episode graph, the integration tests and the
benchmarks all start the station through this one class. Attached (`attach=True`), it starts
no station: it joins one started by `ros2 launch harness_bringup ...` in ROS_DOMAIN_ID."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import rclpy
from harness_skills.skill_server_node import SkillServer
from harness_types.process import leave_graph
from harness_types.wait import wait_future
from harness_worker.worker_node import WorkerNode
from rclpy.action import ActionClient
from rclpy.executors import Executor, MultiThreadedExecutor
from rclpy.node import Node

from harness_bringup.domain import attached_domain_id, claim_domain_id
from harness_msgs.srv import Reset
from harness_types import names

ATTACH_WAIT_S = 30.0  # how long an attached graph waits for the launched station's worker


class GraphStartError(RuntimeError):
    """A node of the graph did not start; the message says which and why."""


def spun_action_client(executor: Executor, node_name: str, action_type, name: str) -> ActionClient:
    """An action client on a node of its own, added to `executor` once the client is built:
    rclpy's ActionClient joins its node's waitables before it makes its lock, so one built on a
    node an executor already spins can be asked for its entities first, which ends that
    executor's thread (AttributeError: '_lock')."""
    node = Node(node_name, context=executor.context)
    client = ActionClient(node, action_type, name)
    executor.add_node(node)
    return client


class StationGraph:
    """`with StationGraph() as g:` starts everything; leaving the block stops it. `params` is a
    ROS parameter file (config/harness.yaml or a run's params.yaml) for every node."""

    def __init__(
        self,
        client_name: str = 'graph_client',
        params: Path | None = None,
        threads: int = 6,
        attach: bool = False,
    ) -> None:
        self.client_name = client_name
        self.params = params
        self.threads = threads
        self.attach = attach
        self.token = ''
        self._started = False
        self.claim = None
        self._action_nodes = itertools.count(1)

    def ros_args(self) -> list[str]:
        return ['--ros-args', '--params-file', str(self.params)] if self.params else []

    def __enter__(self) -> StationGraph:
        if self.attach:
            try:
                self.domain_id = attached_domain_id()
            except ValueError as exc:
                raise GraphStartError(str(exc)) from None
        else:
            try:
                self.claim = claim_domain_id()
            except (RuntimeError, OSError) as exc:  # every id taken, a lock folder closed to us
                raise GraphStartError(f'no ROS domain for the graph: {exc}') from None
            self.domain_id = self.claim.domain_id
        self.context = rclpy.Context()
        rclpy.init(
            args=['harness', *self.ros_args()], context=self.context, domain_id=self.domain_id
        )
        self.executor = MultiThreadedExecutor(num_threads=self.threads, context=self.context)
        self._started = True
        nodes = []
        if not self.attach:
            try:
                self.worker = WorkerNode(context=self.context)
                self.skills = SkillServer(context=self.context)
            except Exception as exc:
                self.__exit__()
                raise GraphStartError(f'the station did not start: {exc}') from exc
            nodes = [self.worker, self.skills]
            self.skills.station.use_local(self.worker)
        self.client = Node(self.client_name, context=self.context)
        for node in (*nodes, self.client):
            self.executor.add_node(node)
        self._spinning = threading.Thread(target=self.executor.spin, daemon=True)
        self._spinning.start()
        self._reset = self.client.create_client(Reset, names.worker_service('reset'))
        if not self._reset.wait_for_service(timeout_sec=ATTACH_WAIT_S if self.attach else 15):
            self.__exit__()
            raise GraphStartError(
                f'no station answers {names.worker_service("reset")} in ROS domain '
                f'{self.domain_id} within {ATTACH_WAIT_S:g} s: start one first (ros2 launch '
                'harness_bringup mujoco.launch.py, mock_hardware, gazebo or real) in this '
                'domain (ROS_DOMAIN_ID)'
                if self.attach
                else 'the worker did not start'
            )
        return self

    def add_node(self, node: Node) -> None:
        """Spin another node of this context (e.g. the driver's) on the executor."""
        self.executor.add_node(node)

    def action_client(self, action_type, name: str) -> ActionClient:
        """An action client spun by this graph's executor (`spun_action_client`)."""
        node_name = f'{self.client_name}_action_{next(self._action_nodes)}'
        return spun_action_client(self.executor, node_name, action_type, name)

    def reset(self, task: str, layout: int = 0, seed: int = 0) -> Reset.Response:
        """Reset the worker (with the running episode's token); keeps the new token."""
        r = wait_future(
            self._reset.call_async(
                Reset.Request(task=task, layout=layout, seed=seed, token=self.token)
            ),
            60,
        )
        if r.success:
            self.token = r.token
        return r

    def __exit__(self, *exc) -> None:
        if not self._started:
            return
        self._started = False
        worker = getattr(self, 'worker', None)
        if worker is not None:
            worker.close()
        nodes = list(self.executor.get_nodes())
        self.executor.shutdown()
        # The spin thread must be out of the executor before its nodes and context go: one
        # still checking the context would raise InvalidHandle as the process leaves.
        spinning = getattr(self, '_spinning', None)
        if spinning is not None:
            spinning.join(timeout=2.0)
        # Leave the graph in order, as the kernel does: the nodes, then the context, whose
        # destruction says goodbye to the other participants (the episode process ends
        # without the interpreter's teardown, and a later graph in this domain must not see
        # these endpoints for the DDS lease time).
        try:
            leave_graph(nodes, self.context)
        finally:
            if self.claim is not None:
                self.claim.release()
