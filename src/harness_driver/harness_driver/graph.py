"""The node graph of one episode: worker and skill server in this process, the kernel in its
own isolated process, and a client node that resets, runs cells and reads the outcome."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import rclpy
from harness_skills.skill_server_node import SkillServer
from harness_worker.ros_domain import claim_domain_id
from harness_worker.worker_node import make_worker_node
from rclpy.action import ActionClient
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from harness_driver.futures import wait_future
from harness_msgs.action import RunCell
from harness_msgs.srv import Outcome, Reset


class GraphError(RuntimeError):
    """The graph could not do what was asked; the message says what."""


class EpisodeGraph:
    """Start with `with EpisodeGraph(config) as g:`; everything stops on exit."""

    def __init__(self, config: Path | None = None) -> None:
        self.config = config
        self.token = ''
        self.kernel: subprocess.Popen | None = None

    def __enter__(self) -> EpisodeGraph:
        self.claim = claim_domain_id()
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=self.claim.domain_id)
        self.worker = make_worker_node(self.context)
        self.skills = SkillServer(context=self.context)
        self.client = Node('driver', context=self.context)
        self.executor = MultiThreadedExecutor(num_threads=6, context=self.context)
        for node in (self.worker, self.skills, self.client):
            self.executor.add_node(node)
        threading.Thread(target=self.executor.spin, daemon=True).start()
        self._reset = self.client.create_client(Reset, '/worker/reset')
        self._outcome = self.client.create_client(Outcome, '/worker/outcome')
        self._run_cell = ActionClient(self.client, RunCell, '/kernel/run_cell')
        if not self._reset.wait_for_service(timeout_sec=15):
            raise GraphError('the worker did not start')
        return self

    def reset(self, task: str, layout: int, seed: int) -> Reset.Response:
        r = wait_future(
            self._reset.call_async(
                Reset.Request(task=task, layout=layout, seed=seed, token=self.token)
            ),
            60,
        )
        if not r.success:
            raise GraphError(r.message)
        self.token = r.token
        return r

    def start_kernel(self, workspace: Path, log: Path) -> None:
        workspace.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            '-m',
            'harness_kernel.kernel_node',
            '--workspace',
            str(workspace),
            '--log',
            str(log),
        ]
        if self.config is not None:
            command += ['--ros-args', '--params-file', str(self.config)]
        env = dict(os.environ, ROS_DOMAIN_ID=str(self.claim.domain_id))
        self.kernel_output = open(log.with_suffix('.out'), 'w')  # noqa: SIM115 (closed in stop)
        self.kernel = subprocess.Popen(
            command, env=env, stdout=self.kernel_output, stderr=subprocess.STDOUT
        )
        if not self._run_cell.wait_for_server(timeout_sec=30):
            raise GraphError(f'the kernel did not start (see {log.with_suffix(".out")})')

    def run_cell(self, code: str, timeout: float = 900.0) -> RunCell.Result:
        handle = wait_future(self._run_cell.send_goal_async(RunCell.Goal(code=code)), 30)
        if not handle.accepted:
            raise GraphError('the kernel refused the cell')
        return wait_future(handle.get_result_async(), timeout).result

    def outcome(self) -> Outcome.Response:
        r = wait_future(self._outcome.call_async(Outcome.Request(token=self.token)), 30)
        if not r.accepted:
            raise GraphError(r.message)
        return r

    def stop_kernel(self) -> None:
        if self.kernel is not None:
            self.kernel.terminate()
            try:
                self.kernel.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kernel.kill()
            self.kernel_output.close()
            self.kernel = None

    def __exit__(self, *exc) -> None:
        self.stop_kernel()
        self.worker.worker.station.close_renderers()
        self.executor.shutdown()
        rclpy.shutdown(context=self.context)
        self.claim.release()
