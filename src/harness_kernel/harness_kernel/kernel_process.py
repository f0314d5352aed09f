"""Start a kernel process for one episode and run cells in it through /kernel/run_cell."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from harness_skills.station_graph import wait_future
from rclpy.action import ActionClient
from rclpy.node import Node

from harness_msgs.action import RunCell


class KernelProcess:
    """One isolated kernel process in the graph's ROS domain, driven from `client`."""

    def __init__(
        self,
        client: Node,
        domain_id: int,
        workspace: Path,
        log: Path,
        ros_args: list[str] | None = None,
    ) -> None:
        self.client = client
        self.domain_id = domain_id
        self.workspace = workspace
        self.log = log
        self.ros_args = ros_args or []
        self.process: subprocess.Popen | None = None
        self.run_cell_client = ActionClient(client, RunCell, '/kernel/run_cell')

    def start(self, timeout: float = 30.0) -> None:
        """Start the process and wait for its run_cell server; RuntimeError if it does not come."""
        self.workspace.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            '-m',
            'harness_kernel.kernel_node',
            '--workspace',
            str(self.workspace),
            '--log',
            str(self.log),
        ]
        if self.ros_args:
            command += ['--ros-args', *self.ros_args]
        self.output = open(self.log.with_suffix('.out'), 'w')  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            command,
            env=dict(os.environ, ROS_DOMAIN_ID=str(self.domain_id)),
            stdout=self.output,
            stderr=subprocess.STDOUT,
        )
        if not self.run_cell_client.wait_for_server(timeout_sec=timeout):
            raise RuntimeError(f'the kernel did not start (see {self.log.with_suffix(".out")})')
        self._handshake(timeout)

    def _handshake(self, timeout: float) -> None:
        """Run empty cells until one round trip completes. The server can see this client's
        goal before it has discovered the client's reply reader; it then drops the reply
        ("failed to send response (timeout)") and the goal waits forever. After one answered
        round trip both directions are matched."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                handle = wait_future(self.run_cell_client.send_goal_async(RunCell.Goal()), 0.3)
                wait_future(handle.get_result_async(), 10.0)
                return
            except TimeoutError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f'the kernel does not answer (see {self.log.with_suffix(".out")})'
                    ) from None

    def run_cell(self, code: str, timeout: float = 900.0) -> RunCell.Result:
        handle = wait_future(self.run_cell_client.send_goal_async(RunCell.Goal(code=code)), 30)
        if not handle.accepted:
            raise RuntimeError('the kernel refused the cell')
        return wait_future(handle.get_result_async(), timeout).result

    def stop(self) -> None:
        """Stop the process and wait until its server left the graph, so that the next kernel
        of this domain is not mistaken for it."""
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.output.close()
        self.process = None
        deadline = time.monotonic() + 20
        while self.run_cell_client.server_is_ready() and time.monotonic() < deadline:
            time.sleep(0.05)
