"""The node graph of one episode: the station (worker and skill server) in this process, the
kernel in its own isolated process, and the driver's node that resets, runs cells, serves the
verifier and reads the outcome with the token. Implements the episode's `Station`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from harness_bench.task import Outcome as TaskOutcome
from harness_kernel.kernel_process import KernelProcess
from harness_skills.perception import rotation_from_quat
from harness_skills.station_graph import StationGraph, wait_future
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.qos import DurabilityPolicy, QoSProfile
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from harness_driver.bag import BagRecorder
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

    def __init__(self, config: Path | None = None) -> None:
        super().__init__('driver')
        self.config = config
        self.kernel: KernelProcess | None = None
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

    def record(self, bag: BagRecorder) -> None:
        """Write the recorded topics to `bag` as they arrive (raw CDR, receive time stamps, as
        `ros2 bag record` does). Subscribing makes the worker publish /joint_states and /tf."""
        types = {'/joint_states': JointState, '/tf': TFMessage, '/clock': Clock}
        types['/robot_description'] = String
        for topic, kind in types.items():
            if topic not in bag.topics:
                continue
            qos = QoSProfile(depth=200)
            if topic == '/robot_description':
                qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self.client.create_subscription(
                kind,
                topic,
                lambda data, topic=topic: bag.write(topic, data, time.time_ns()),
                qos,
                raw=True,
            )

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
        super().__exit__(*exc)
