"""The skill server: one action server per skill of the skill table (skills/<name>), each goal
one bounded execution; and what programs may read about the robot (skills/state,
skills/observe, skills/ik), served from the worker's services. Programs reach the robot only
through these.

Every execution ticks the worker through worker/tick; while the goal asks for reactive code
it calls kernel/reactive_step once per tick (from a node of its own: harness_types/lanes.py).
Each result is one ExecutionTrace: the event and every tick. Each execution's start and end go
out on skills/executions (JSON); one bounded by a region shows it on harness/markers while it
runs.
Parameters: harness_types.config.SkillServerConfig.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import threading
import traceback

import rclpy
from arx_x5_description.embodiment import load_embodiment
from harness_policy.client import PolicyClient
from harness_types.config import SkillServerConfig, declare_section
from harness_types.convert import marker_array_msg, trace_msg
from harness_types.execution import CLIENT_CANCELLED, ESTOP_REFUSED, ESTOP_STOPPED, skill_error
from harness_types.lanes import LaneClient, LaneService
from harness_types.markers import region_mark
from harness_types.process import leave_graph
from harness_types.wait import InFlight
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.utilities import get_default_context
from std_msgs.msg import String
from visualization_msgs.msg import MarkerArray

from harness_msgs.srv import Estop, Ik, Observe, Predict, ReactiveStep, State
from harness_skills.execution import Engine
from harness_skills.ros_port import RosReactivePort, RosStationPort, ServiceError
from harness_skills.skill_table import SKILLS, SkillSpec, options_of
from harness_skills.skills import Skills
from harness_types import names

# What programs may read about the robot: the skill server's service -> the worker's.
READ_SERVICES = {
    names.SKILL_STATE: (State, 'state'),
    names.SKILL_OBSERVE: (Observe, 'observe'),
    names.SKILL_IK: (Ik, 'ik'),
    names.SKILL_PREDICT: (Predict, 'predict'),
}


class SkillServer(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__(names.SKILL_SERVER, **kwargs)
        self.config = declare_section(self, SkillServerConfig)
        emb = load_embodiment()
        self.cameras = tuple(emb.cameras)
        timeout = self.config.service_timeout_seconds
        self.station = RosStationPort(self, timeout)
        self.reactive_lane = LaneClient(
            names.SKILL_SERVER_REACTIVE, self, ReactiveStep, names.REACTIVE_STEP
        )
        self.reactive = RosReactivePort(self.reactive_lane, self.station, timeout)
        engine = Engine(
            self.station, emb.rates.control_hz, self.reactive, emb.shield.max_contact_force_n
        )
        self.skills = Skills(
            engine,
            emb.gripper.closed_below,
            lambda url, t: PolicyClient(url, t, t),  # the reply timeout bounds the connect too
        )
        self.markers = self.create_publisher(MarkerArray, names.MARKERS, 10)
        self.executions = self.create_publisher(String, names.EXECUTIONS, 50)
        self._region_ids = itertools.count(1)  # next() is atomic: executions run in parallel
        group = ReentrantCallbackGroup()
        for spec in SKILLS.values():
            ActionServer(
                self,
                spec.action,
                names.skill_action(spec.name),
                lambda handle, spec=spec: self._execute(spec, handle),
                callback_group=group,
                cancel_callback=lambda _g: CancelResponse.ACCEPT,
                # Finished goals are kept only briefly: with thousands of goals the default
                # (900 s) slows every round trip (ROS_ON_PYPI.md).
                result_timeout=self.config.result_timeout_seconds,
            )
        self._estop = threading.Event()
        self._estop_at: tuple[int, bool] | None = None  # (estop_at)
        self.executing = InFlight()  # executions running now
        self.create_service(Estop, names.SKILL_ESTOP, self._serve_estop, callback_group=group)
        # Each read service on a lane of its own, not the executor: a skills/ik round trip
        # (pick asks a dozen or more) took ~7 ms through it, ~2 ms here (harness_types/lanes.py).
        self.read_lanes = [
            LaneService(
                names.lane_node(names.SKILL_SERVER, worker_service),
                self,
                kind,
                name,
                lambda request, response, s=worker_service: self._forward(s, request, response),
            )
            for name, (kind, worker_service) in READ_SERVICES.items()
        ]

    def estop(self, engage: bool) -> None:
        """Engage or release the emergency stop (skills/estop does the same over ROS)."""
        if engage:
            self._estop.set()
        else:
            self._estop.clear()
        self.get_logger().warning('emergency stop ' + ('engaged' if engage else 'released'))

    def estop_at(self, step: int | None, cut: bool = False) -> None:
        """Engage the emergency stop so that the motion ends at `step` (None: no such step):
        a resumed operator session replays a trial that a stop from outside ended early so
        that it ends where it ended. `cut`: that stop came during an execution, whose stop
        took the last tick (the arm held its pose): engaged as an execution is a tick before
        `step`; else it came between executions: an execution that would start at `step` or
        after is refused."""
        self._estop_at = None if step is None else (step, cut)

    def end_executions(self) -> None:
        """An episode is over: every execution still running ends at its next tick, and none
        starts (the emergency stop, engaged quietly: nobody pressed it) until
        between_episodes releases it."""
        self._estop.set()

    def between_episodes(self, timeout: float = 10.0) -> bool:
        """A warm station's next episode starts: every execution still running (one a cell
        left behind) ends at its next tick under the emergency stop, which is then released
        (also one an operator left engaged), and the region markers' ids start again. False
        when an execution did not end within `timeout` seconds."""
        self.end_executions()
        try:
            ended = self.executing.wait_none(timeout)
        finally:
            self._estop.clear()
        self._region_ids = itertools.count(1)
        return ended

    def _serve_estop(self, request: Estop.Request, response: Estop.Response) -> Estop.Response:
        self.estop(bool(request.engage))
        response.engaged = self._estop.is_set()
        response.message = 'engaged: no execution runs' if response.engaged else 'released'
        return response

    def _replay_stop(self, step: int, starting: bool) -> None:
        """Engage the emergency stop where estop_at asks, at `step`: an execution under way
        a tick before its step (cut), one `starting` at it or after (not cut)."""
        at = self._estop_at
        if at is not None and (
            (at[1] and not starting and step + 1 >= at[0])
            or (not at[1] and starting and step >= at[0])
        ):
            self._estop.set()

    def _cancelled(self, goal_handle, step: int) -> str:
        self._replay_stop(step, starting=False)
        if self._estop.is_set():
            return ESTOP_STOPPED
        return CLIENT_CANCELLED if goal_handle.is_cancel_requested else ''

    def destroy_node(self) -> None:
        self.reactive_lane.close()
        for lane in self.read_lanes:  # (first: a read they serve is forwarded to the station)
            lane.close()
        self.station.close()
        super().destroy_node()

    def _announce(self, record: dict) -> None:
        """An execution's start or end on skills/executions (one JSON object)."""
        self.executions.publish(String(data=json.dumps(record)))

    def _forward(self, service: str, request, response):
        try:
            return self.station.call(service, request)
        except ServiceError as exc:
            self.get_logger().error(str(exc))
            if hasattr(response, 'message'):
                response.success, response.message = False, str(exc)
            return response

    def _execute(self, spec: SkillSpec, goal_handle):
        with self.executing:
            return self._execution(spec, goal_handle)

    def _execution(self, spec: SkillSpec, goal_handle):
        goal = goal_handle.request
        result = spec.action.Result()
        try:
            options = options_of(goal.options)
        except ValueError as exc:
            result.execution = trace_msg(skill_error(spec.name, getattr(goal, 'arm', ''), str(exc)))
            goal_handle.abort()
            return result

        feedback_every = self.config.feedback_every_ticks

        def feedback(tick, obs):
            if tick % feedback_every == 0:
                msg = spec.action.Feedback()
                msg.tick = tick
                goal_handle.publish_feedback(msg)

        self._announce(
            {'phase': 'start', 'id': options.execution_id, 'skill': spec.name}
            | {'arm': getattr(goal, 'arm', '')}
        )
        region = options.region
        if region is not None:  # shown in rviz while the execution is bounded by it
            marker_id = next(self._region_ids)
            self.markers.publish(marker_array_msg([region_mark(marker_id, *region)]))
        if self._estop_at is not None:  # (a replay's: at most once an execution)
            with contextlib.suppress(ServiceError):  # (unread: the execution meets it itself)
                self._replay_stop(self.station.observe_state().step, starting=True)
        unknown = [c for c in getattr(goal, 'cameras', ()) if c not in self.cameras]
        refused = (
            ESTOP_REFUSED
            if self._estop.is_set()
            else f'no camera {", ".join(map(repr, unknown))}; cameras: {", ".join(self.cameras)}'
            if unknown and spec.name == 'run_controller'
            else ''
        )
        if refused:
            result.execution = trace_msg(skill_error(spec.name, getattr(goal, 'arm', ''), refused))
            goal_handle.abort()
            return result
        run = dict(feedback=feedback, cancelled=lambda step: self._cancelled(goal_handle, step))
        if spec.name == 'run_controller':
            hz = goal.camera_hz if goal.camera_hz > 0 else (goal.hz or self.skills.control_hz)
            camera_every = max(1, round((goal.hz or self.skills.control_hz) / hz))
            self.reactive.use_cameras(list(goal.cameras), camera_every)
        try:
            execution = spec.run(self.skills, goal, options, run)
        except ServiceError as exc:
            execution = skill_error(spec.name, getattr(goal, 'arm', ''), str(exc))
        except Exception as exc:  # a bug here must not leave the goal without a result
            self.get_logger().error(f'{spec.name} failed: {traceback.format_exc()}')
            detail = f'the skill server failed: {type(exc).__name__}: {exc}'
            execution = skill_error(spec.name, getattr(goal, 'arm', ''), detail)
        finally:
            self.reactive.use_cameras([], 1)
            if region is not None:
                mark = region_mark(marker_id, *region, active=False)
                self.markers.publish(marker_array_msg([mark]))
        self._announce(
            {'phase': 'end', 'id': options.execution_id, 'skill': spec.name}
            | {'arm': execution.arm, 'event': execution.event, 'detail': execution.detail}
            | {'reasons': list(execution.reasons), 'start_step': execution.start_step}
            | {'end_step': execution.end_step, 'time': execution.time}
        )
        result.execution = trace_msg(execution)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return result


def main(args: list[str] | None = None) -> int:
    rclpy.init(args=args)
    node = SkillServer()
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    try:
        executor.spin()
    except KeyboardInterrupt:
        pass
    finally:
        leave_graph([node], get_default_context())
    return 0


if __name__ == '__main__':
    sys.exit(main())
