"""The node graph of one episode: the station (worker and skill server) in this process, the
kernel in its own isolated process, and the driver's node that resets, runs cells, serves the
verifier and reads the outcome with the token. Implements the episode's `Station`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from harness_bench.task import Outcome as TaskOutcome
from harness_kernel.kernel_process import KernelProcess
from harness_skills.perception import rotation_from_quat
from harness_skills.station_graph import StationGraph, wait_future
from rclpy.callback_groups import ReentrantCallbackGroup
from std_msgs.msg import String

from harness_driver.records import (
    ArmReading,
    CameraImage,
    CellReport,
    EpisodeStart,
    ExecutionSummary,
    ObjectReading,
    RobotReading,
    VerdictReading,
)
from harness_msgs.action import RunCell
from harness_msgs.srv import Observe, Outcome, State, Verify


class GraphError(RuntimeError):
    """The graph could not do what was asked; the message says what."""


def _rgb(image) -> np.ndarray:
    return np.frombuffer(bytes(image.data), np.uint8).reshape(image.height, image.width, 3).copy()


def cell_report(r: RunCell.Result) -> CellReport:
    """A RunCell result as the driver's record."""
    report = r.report
    return CellReport(
        status=r.status,
        output=r.output,
        traceback=r.traceback,
        summary=r.summary,
        event=r.event.name,
        event_detail=r.event.detail,
        event_skill=r.event.skill,
        executions=[
            ExecutionSummary(t.skill, t.arm, t.event.name, t.event.detail, len(t.ticks))
            for t in r.executions
        ],
        images=[(c, _rgb(img)) for c, img in zip(r.image_captions, r.images, strict=False)],
        restored=list(r.restored),
        events_handled=int(r.events_handled),
        objects=[
            ObjectReading(
                o.id,
                o.label,
                [o.position.x, o.position.y, o.position.z],
                [o.size.x, o.size.y, o.size.z],
            )
            for o in report.objects
        ],
        holds={'left': report.left_holds, 'right': report.right_holds},
        measured=bool(report.measured),
    )


class EpisodeGraph(StationGraph):
    """Start with `with EpisodeGraph(config) as g:`; everything stops on exit."""

    def __init__(self, config: Path | None = None, bag: Path | None = None) -> None:
        super().__init__('driver')
        self.config = config
        self.bag = bag  # where the recorder writes the episode's rosbag; None = no recording
        self.notes: dict = {}  # what became of the recording (the episode's summary shows it)
        self.kernel: KernelProcess | None = None
        self.recorder: subprocess.Popen | None = None
        self._verify: Callable[[str], VerdictReading] | None = None

    def __enter__(self) -> EpisodeGraph:
        try:
            super().__enter__()
        except RuntimeError as exc:
            raise GraphError(str(exc)) from None
        group = ReentrantCallbackGroup()
        self._outcome = self.client.create_client(Outcome, '/worker/outcome')
        self._state = self.client.create_client(State, '/worker/state', callback_group=group)
        self._observe = self.client.create_client(Observe, '/worker/observe', callback_group=group)
        self.client.create_service(
            Verify, '/driver/verify', self._serve_verify, callback_group=group
        )
        self._events = self.client.create_publisher(String, '/harness/events', 500)
        return self

    # Station ------------------------------------------------------------------------------

    def reset(self, task: str, layout: int = 0, seed: int = 0) -> EpisodeStart:
        r = super().reset(task, layout, seed)
        if not r.success:
            raise GraphError(r.message)
        return EpisodeStart(r.instruction, r.description)

    def robot(self) -> RobotReading:
        s = wait_future(self._state.call_async(State.Request()), 30).state

        def arm(a) -> ArmReading:
            p = a.tcp.position
            return ArmReading(a.name, list(a.joints), a.gripper, [p.x, p.y, p.z], a.grip_force)

        return RobotReading(arm(s.left), arm(s.right), int(s.step), float(s.sim_time))

    def cameras(self, names: list[str]) -> list[CameraImage]:
        r = wait_future(self._observe.call_async(Observe.Request(cameras=names)), 60)
        if not r.success:
            raise GraphError(r.message)
        out = []
        for v in r.views:
            q, p, k = v.pose.orientation, v.pose.position, v.info.k
            out.append(
                CameraImage(
                    v.name,
                    _rgb(v.rgb),
                    k[0],
                    k[4],
                    k[2],
                    k[5],
                    np.array([p.x, p.y, p.z]),
                    rotation_from_quat(q.w, q.x, q.y, q.z),
                )
            )
        return out

    def start_kernel(self, workspace: Path, log: Path) -> None:
        ros_args = ['--params-file', str(self.config)] if self.config is not None else []
        self.kernel = KernelProcess(self.client, self.domain_id, workspace, log, ros_args)
        try:
            self.kernel.start()
        except RuntimeError as exc:
            raise GraphError(str(exc)) from None
        if self.bag is not None and self.recorder is None:
            # After the kernel: a kernel joining a domain where the recorder already was took
            # 0.5-4 s to be discovered (measured), the other order 0.5 + 0.4 s.
            try:
                self.start_recorder(self.bag)
                self.notes['bag'] = self.bag.name
            except GraphError as exc:  # an episode without a bag beats no episode
                self.notes['bag_error'] = str(exc)

    def run_cell(self, code: str, timeout: float = 900.0) -> CellReport:
        if self.kernel is None:
            raise GraphError('no kernel is running')
        try:
            return cell_report(self.kernel.run_cell(code, timeout))
        except RuntimeError as exc:
            raise GraphError(str(exc)) from None

    def stop_kernel(self) -> None:
        if self.kernel is not None:
            self.kernel.stop()
            self.kernel = None

    def outcome(self) -> TaskOutcome:
        r = wait_future(self._outcome.call_async(Outcome.Request(token=self.token)), 30)
        if not r.accepted:
            raise GraphError(r.message)
        return TaskOutcome(bool(r.success), float(r.score), r.detail)

    def start_recorder(self, bag: Path, timeout: float = 20.0) -> None:
        """Start the recorder process (rosbag2 of the episode) and wait until it listens."""
        command = [sys.executable, '-m', 'harness_driver.recorder_node', str(bag)]
        self._recorder_out = open(bag.with_name('recorder.out'), 'w')  # noqa: SIM115
        self.recorder = subprocess.Popen(
            command,
            env=dict(os.environ, ROS_DOMAIN_ID=str(self.domain_id)),
            stdout=self._recorder_out,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while self._events.get_subscription_count() < 1:
            if self.recorder.poll() is not None or time.monotonic() > deadline:
                raise GraphError(
                    f'the recorder did not start (see {bag.with_name("recorder.out")})'
                )
            time.sleep(0.02)

    def publish_event(self, line: str) -> None:
        """One line of events.jsonl on /harness/events (the recorder ends on the `end` event)."""
        self._events.publish(String(data=line))

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

    def serve_verify(self, verify: Callable[[str], VerdictReading]) -> None:
        self._verify = verify

    def _serve_verify(self, request: Verify.Request, response: Verify.Response):
        if self._verify is None:
            response.answered, response.sentence = False, 'no verifier in this run'
            return response
        try:
            verdict = self._verify(request.claim)
        except Exception as exc:  # a failed verifier call is an answer the program can read
            verdict = VerdictReading(False, False, f'the verifier failed: {exc}')
        response.answered, response.yes, response.sentence = (
            verdict.answered,
            verdict.yes,
            verdict.sentence,
        )
        return response

    def __exit__(self, *exc) -> None:
        self.stop_kernel()
        if self.recorder is not None:
            self.recorder.terminate()
            self.stop_recorder()
        super().__exit__(*exc)
