"""The station side of an episode in this process: worker and skill server on one executor in
a private ROS domain, plus a client node. The driver, the integration tests and the benchmarks
all start the graph through this one class."""

from __future__ import annotations

import threading
import time
from typing import Any

import rclpy
from harness_worker.ros_domain import claim_domain_id
from harness_worker.worker_node import make_worker_node
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from harness_msgs.srv import Reset
from harness_skills.skill_server_node import SkillServer


def wait_future(future, timeout: float) -> Any:
    """The future's result; TimeoutError if it is not done within `timeout` seconds (the
    executor spins in another thread)."""
    deadline = time.monotonic() + timeout
    while not future.done():
        if time.monotonic() > deadline:
            raise TimeoutError(f'no answer within {timeout:.0f} s')
        time.sleep(0.001)
    return future.result()


class StationGraph:
    """`with StationGraph() as g:` starts everything; leaving the block stops it."""

    def __init__(self, client_name: str = 'driver', threads: int = 6) -> None:
        self.client_name = client_name
        self.threads = threads
        self.token = ''

    def __enter__(self) -> StationGraph:
        self.claim = claim_domain_id()
        self.domain_id = self.claim.domain_id
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=self.domain_id)
        self.worker = make_worker_node(self.context)
        self.skills = SkillServer(context=self.context)
        self.client = Node(self.client_name, context=self.context)
        self.executor = MultiThreadedExecutor(num_threads=self.threads, context=self.context)
        for node in (self.worker, self.skills, self.client):
            self.executor.add_node(node)
        threading.Thread(target=self.executor.spin, daemon=True).start()
        self._reset = self.client.create_client(Reset, '/worker/reset')
        if not self._reset.wait_for_service(timeout_sec=15):
            self.__exit__()
            raise RuntimeError('the worker did not start')
        return self

    def add_node(self, node: Node) -> None:
        """Spin another node of this context (e.g. a reactive_step stand-in) on the executor."""
        self.executor.add_node(node)

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
        self.worker.worker.station.close_renderers()
        self.executor.shutdown()
        rclpy.shutdown(context=self.context)
        self.claim.release()
