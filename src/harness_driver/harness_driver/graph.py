"""The node graph of one episode: the station (worker and skill server) in this process, the
kernel in its own isolated process, and the driver's client that resets, runs cells and reads
the outcome with the token."""

from __future__ import annotations

from pathlib import Path

from harness_kernel.kernel_process import KernelProcess
from harness_skills.station_graph import StationGraph, wait_future

from harness_msgs.action import RunCell
from harness_msgs.srv import Outcome, Reset


class GraphError(RuntimeError):
    """The graph could not do what was asked; the message says what."""


class EpisodeGraph(StationGraph):
    """Start with `with EpisodeGraph(config) as g:`; everything stops on exit."""

    def __init__(self, config: Path | None = None) -> None:
        super().__init__('driver')
        self.config = config
        self.kernel: KernelProcess | None = None

    def __enter__(self) -> EpisodeGraph:
        try:
            super().__enter__()
        except RuntimeError as exc:
            raise GraphError(str(exc)) from None
        self._outcome = self.client.create_client(Outcome, '/worker/outcome')
        return self

    def reset(self, task: str, layout: int = 0, seed: int = 0) -> Reset.Response:
        r = super().reset(task, layout, seed)
        if not r.success:
            raise GraphError(r.message)
        return r

    def start_kernel(self, workspace: Path, log: Path) -> None:
        ros_args = ['--params-file', str(self.config)] if self.config is not None else []
        self.kernel = KernelProcess(self.client, self.domain_id, workspace, log, ros_args)
        try:
            self.kernel.start()
        except RuntimeError as exc:
            raise GraphError(str(exc)) from None

    def run_cell(self, code: str, timeout: float = 900.0) -> RunCell.Result:
        try:
            return self.kernel.run_cell(code, timeout)
        except RuntimeError as exc:
            raise GraphError(str(exc)) from None

    def outcome(self) -> Outcome.Response:
        r = wait_future(self._outcome.call_async(Outcome.Request(token=self.token)), 30)
        if not r.accepted:
            raise GraphError(r.message)
        return r

    def stop_kernel(self) -> None:
        if self.kernel is not None:
            self.kernel.stop()
            self.kernel = None

    def __exit__(self, *exc) -> None:
        self.stop_kernel()
        super().__exit__(*exc)
