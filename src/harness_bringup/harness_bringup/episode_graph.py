"""The node graph of one episode: the station (worker and skill server) and the driver's node
in this process, the kernel in its own process (which runs programs in its sandboxed program
process), and the recorder in its own. Implements the episode's `Station`
(harness_driver.episode)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from harness_bench.task import Outcome
from harness_driver.driver_node import DriverNode, GraphError
from harness_driver.episode import EpisodeStart
from harness_types.camera import CameraView
from harness_types.cell import CellResult
from harness_types.robot_state import RobotState
from harness_types.scene import Verdict

from harness_bringup.kernel_process import KernelProcess, KernelStartError
from harness_bringup.processes import child_environment
from harness_bringup.station_graph import GraphStartError, StationGraph


class EpisodeGraph(StationGraph):
    """Start with `with EpisodeGraph(params, bag) as g:`; everything stops on exit. `params`
    is the run's parameter file; `bag` where the recorder writes (None: no recording)."""

    def __init__(self, params: Path | None = None, bag: Path | None = None) -> None:
        super().__init__('graph_client', params)
        self.bag = bag
        self.notes: dict = {}  # what became of the recording (the episode's summary shows it)
        self.kernel: KernelProcess | None = None
        self.recorder: subprocess.Popen | None = None
        self._recorder_out = None

    def __enter__(self) -> EpisodeGraph:
        try:
            super().__enter__()
        except GraphStartError as exc:
            raise GraphError(str(exc)) from None
        try:
            self.driver = DriverNode(context=self.context)
        except Exception as exc:
            self.__exit__()
            raise GraphError(f'the driver node did not start: {exc}') from None
        self.add_node(self.driver)
        profile = self.driver.profile()
        if profile.kind != 'robot' or len(profile.command_layout) != 14:
            self.__exit__()
            raise GraphError(
                f'the worker embodies a {profile.kind!r} with {len(profile.command_layout)} '
                f'command entries ({profile.robot}, backend {profile.backend}); this driver '
                'drives a dual-arm robot with 14'
            )
        self.notes['backend'] = profile.backend
        return self

    # Station --------------------------------------------------------------------------------

    def reset(self, task: str, layout: int = 0, seed: int = 0) -> EpisodeStart:
        return EpisodeStart(*self.driver.reset(task, layout, seed))

    def robot(self) -> RobotState:
        return self.driver.robot()

    def cameras(self, names: list[str]) -> list[CameraView]:
        return self.driver.cameras(names)

    def outcome(self) -> Outcome:
        return self.driver.outcome()

    def serve_verify(self, verify: Callable[[str], Verdict]) -> None:
        self.driver.serve_verify(verify)

    def start_kernel(self, workspace: Path, log: Path) -> None:
        self.kernel = KernelProcess(
            self.driver.run_cell_client,
            self.domain_id,
            workspace,
            log,
            ['--params-file', str(self.params)] if self.params else [],
        )
        try:
            self.kernel.start()
        except KernelStartError as exc:
            raise GraphError(str(exc)) from None
        if self.bag is not None and self.recorder is None:
            # After the kernel: a kernel joining a domain where the recorder already was took
            # 0.5-4 s to be discovered (measured), the other order 0.5 + 0.4 s.
            try:
                self.start_recorder(self.bag)
                self.notes['bag'] = self.bag.name
            except GraphError as exc:  # an episode without a bag beats no episode
                self.notes['bag_error'] = str(exc)

    def _kernel_gone(self) -> str:
        return self.kernel.death() if self.kernel is not None else 'no kernel is running'

    def run_cell(self, code: str, timeout: float = 900.0) -> CellResult:
        return self.driver.run_cell(code, timeout, self._kernel_gone)

    def wrap_up(self, timeout: float = 900.0) -> CellResult:
        return self.driver.run_cell('', timeout, self._kernel_gone, wrap_up=True)

    def stop_kernel(self) -> None:
        if self.kernel is not None:
            self.kernel.stop()
            self.kernel = None

    # The recorder ---------------------------------------------------------------------------

    def start_recorder(self, bag: Path, timeout: float = 20.0) -> None:
        """Start the recorder process (rosbag2 of the episode) and wait until it listens."""
        command = [sys.executable, '-m', 'harness_driver.recorder_node', str(bag)]
        self._recorder_out = open(bag.with_name('recorder.out'), 'w')  # noqa: SIM115
        self.recorder = subprocess.Popen(
            command,
            env=child_environment(self.domain_id),
            stdout=self._recorder_out,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while self.driver.events_listeners() < 1:
            if self.recorder.poll() is not None or time.monotonic() > deadline:
                raise GraphError(
                    f'the recorder did not start (see {bag.with_name("recorder.out")})'
                )
            time.sleep(0.02)

    def publish_event(self, line: str) -> None:
        self.driver.publish_event(line)

    def stop_recorder(self, timeout: float = 15.0) -> None:
        """Wait for the recorder to close the bag after the `end` event; stop it otherwise."""
        if self.recorder is None:
            return
        try:
            self.recorder.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.recorder.terminate()
            self.recorder.wait(timeout=10)
        self._recorder_out.close()
        self.recorder = None

    def __exit__(self, *exc) -> None:
        self.stop_kernel()
        if self.recorder is not None:
            self.recorder.terminate()
            self.stop_recorder()
        super().__exit__(*exc)
