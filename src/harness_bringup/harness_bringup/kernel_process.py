"""Start an episode's kernel node in its own process and know whether it still runs."""

from __future__ import annotations

import json
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

from harness_types.wait import wait_future
from rclpy.action import ActionClient

from harness_bringup.processes import child_environment, wait_or_kill
from harness_msgs.action import RunCell

HANDSHAKE_TRY_S = 0.1  # how long the start handshake waits for its empty cell to be accepted


class KernelStartError(RuntimeError):
    """The kernel did not start or does not answer; the message says where to look."""


class KernelProcess:
    """One kernel process in the graph's ROS domain, reached through `run_cell` (an action
    client of another node of that domain)."""

    def __init__(
        self,
        run_cell: ActionClient,
        domain_id: int,
        workspace: Path | None,
        log: Path,
        ros_args: list[str] | None = None,
        warm: bool = False,
        passes: Path | None = None,
    ) -> None:
        """`log`: kernel.log (its output goes beside it, `.out`). `warm`: a warm station's
        kernel, which serves episode after episode as `request` asks (`workspace` is then not
        used, and `log` only names where its output goes between episodes). `passes`: the
        station's folder of perception passes shared with the verifier's eyes."""
        self.run_cell_client = run_cell
        self.domain_id = domain_id
        self.workspace = workspace
        self.log = log
        self.ros_args = ros_args or []
        self.warm = warm
        self.passes = passes
        self.process: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._replies = b''
        self._lost = ''  # why a warm kernel's requests can no longer be trusted

    @property
    def output_path(self) -> Path:
        return self.log.with_suffix('.out')

    def start(self, timeout: float = 30.0) -> None:
        """Start the process and wait until one cell round trip works."""
        self.launch()
        self.wait_ready(timeout)

    def launch(self) -> None:
        """Start the process; wait_ready() waits for it to serve cells."""
        command = [sys.executable, '-m', 'harness_kernel.kernel_node']
        passed: tuple[int, ...] = ()
        theirs = None
        if self.warm:
            self._control, theirs = socket.socketpair()
            passed = (theirs.fileno(),)
            command += ['--control', str(theirs.fileno())]
        else:
            self.workspace.mkdir(parents=True, exist_ok=True)
            command += ['--workspace', str(self.workspace), '--log', str(self.log)]
        if self.passes is not None:
            command += ['--passes', str(self.passes)]
        if self.ros_args:
            command += ['--ros-args', *self.ros_args]
        try:
            with open(self.output_path, 'w') as output:
                self.process = subprocess.Popen(
                    command,
                    env=child_environment(self.domain_id),
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    pass_fds=passed,
                )
        finally:
            if theirs is not None:
                theirs.close()

    def request(self, op: str, timeout: float = 120.0, **fields) -> dict:
        """A warm kernel's answer to `op` (prepare, begin, end) with `fields`;
        KernelStartError when it does not answer (gone, or out of time)."""
        if self._control is None:
            raise KernelStartError('this kernel takes no requests (it serves one episode)')
        try:
            self._control.sendall((json.dumps({'op': op, **fields}) + '\n').encode())
        except OSError as exc:
            raise KernelStartError(f'the kernel took no request ({self.death() or exc})') from None
        deadline = time.monotonic() + timeout
        while b'\n' not in self._replies:
            left = deadline - time.monotonic()
            if left <= 0 or self.death():
                why = f'the kernel did not answer {op!r} ({self.death() or "timeout"}; see '
                why += f'{self.output_path})'
                # A late answer would be taken for the next request's: no more requests.
                self._control.close()
                self._control, self._lost = None, why
                raise KernelStartError(why)
            ready, _, _ = select.select([self._control], [], [], min(left, 0.2))
            if ready:
                chunk = self._control.recv(65536)
                if not chunk:
                    raise KernelStartError(
                        f'the kernel closed its requests ({self.death() or "no reason"}; see '
                        f'{self.output_path})'
                    )
                self._replies += chunk
        line, self._replies = self._replies.split(b'\n', 1)
        return json.loads(line)

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until the launched kernel answers one cell round trip."""
        deadline = time.monotonic() + timeout
        while not self.run_cell_client.server_is_ready():
            if self.death() or time.monotonic() > deadline:
                raise KernelStartError(
                    f'the kernel did not start ({self.death() or "no answer"}; see '
                    f'{self.output_path})'
                )
            time.sleep(0.02)
        self._handshake(deadline)

    def _handshake(self, deadline: float) -> None:
        """Run empty cells until one round trip completes. The server can see this client's
        goal before it has discovered the client's reply reader; it then drops the reply
        ("failed to send response (timeout)") and the goal waits forever. After one answered
        round trip both directions are matched. An empty cell is accepted within
        milliseconds once matched: a goal unanswered after HANDSHAKE_TRY_S is sent again."""
        while True:
            try:
                goal = self.run_cell_client.send_goal_async(RunCell.Goal())
                handle = wait_future(goal, HANDSHAKE_TRY_S)
                wait_future(handle.get_result_async(), 10.0)
                return
            except TimeoutError:
                if self.death() or time.monotonic() > deadline:
                    raise KernelStartError(
                        f'the kernel does not answer ({self.death() or "timeout"}; see '
                        f'{self.output_path})'
                    ) from None

    def death(self) -> str:
        """Why the kernel process is gone, or '' while it runs."""
        if self.process is None:
            return 'the kernel is not running'
        if self._lost:
            return self._lost
        code = self.process.poll()
        if code is None:
            return ''
        how = f'killed by signal {-code}' if code < 0 else f'exit code {code}'
        return f'the kernel process ended ({how}; see {self.output_path})'

    def stop(self, wait_gone: bool = True) -> None:
        """Stop the process and (`wait_gone`) wait until its server left the graph, so that
        the next kernel of this domain is not mistaken for it: up to 20 s after a SIGKILL,
        which leaves the server's discovery entry until its lease runs out."""
        if self._control is not None:
            self._control.close()  # a warm kernel ends at its requests' end
            self._control = None
        if self.process is None:
            return
        self.process.terminate()
        wait_or_kill(self.process, 10)
        self.process = None
        deadline = time.monotonic() + 20
        while wait_gone and self.run_cell_client.server_is_ready() and time.monotonic() < deadline:
            time.sleep(0.05)
