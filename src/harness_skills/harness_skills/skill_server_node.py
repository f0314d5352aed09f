"""The skill server: one action server per skill (/skills/<name>), each goal one execution.

Every execution ticks the worker through /worker/tick; while the goal asks for reactive code
it calls /kernel/reactive_step once per tick. Results carry exactly one event and the trace.
"""

from __future__ import annotations

import sys

import numpy as np
import rclpy
from harness_reactive.guards import Watch
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

from harness_msgs.action import Gripper, Home, MoveEef, MoveJoints, RunController
from harness_msgs.msg import Event, ExecutionTrace, TraceTick
from harness_skills.execution import Engine, ExecutionResult, Options
from harness_skills.ros_port import RosReactivePort, RosStationPort
from harness_skills.skills import Skills

# Finished goals are kept only briefly: with thousands of goals the default (900 s) slows
# every round trip (ROS_ON_PYPI.md).
RESULT_TIMEOUT_S = 10


def options_of(msg) -> Options:
    """ExecutionOptions message -> Options; ValueError for a malformed watch or region."""
    region = None
    if msg.use_region:
        lo, hi = np.array(msg.region_min), np.array(msg.region_max)
        if np.any(lo > hi):
            raise ValueError(f'region_min {lo.tolist()} is above region_max {hi.tolist()}')
        region = (lo, hi)
    watches = tuple(
        Watch(w.name or w.signal, w.signal, w.low, w.high, w.action or 'stop') for w in msg.watches
    )
    return Options(msg.max_seconds, region, watches, msg.reactive, msg.execution_id)


def fill_result(result_msg, r: ExecutionResult) -> None:
    e = r.event
    result_msg.event = Event(
        name=e.name, detail=e.detail, reasons=list(e.reasons), skill=e.skill, time=float(e.time)
    )
    trace = ExecutionTrace(
        skill=r.skill,
        arm=r.arm,
        start_step=r.start_step,
        end_step=r.end_step,
        event=result_msg.event,
    )
    trace.ticks = [
        TraceTick(
            time=t.time,
            measured=t.measured.tolist(),
            command=t.command.tolist(),
            guards=list(t.guards),
        )
        for t in r.ticks
    ]
    result_msg.trace = trace


class SkillServer(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__('skill_server', **kwargs)
        self.station = RosStationPort(self)
        self.reactive = RosReactivePort(self)
        self.reactive.station = self.station
        self.skills = Skills(Engine(self.station, self.reactive))
        group = ReentrantCallbackGroup()
        for name, kind, execute in [
            ('move_joints', MoveJoints, self._move_joints),
            ('move_eef', MoveEef, self._move_eef),
            ('open_gripper', Gripper, self._open),
            ('close_gripper', Gripper, self._close),
            ('home', Home, self._home),
            ('run_controller', RunController, self._controller),
        ]:
            ActionServer(
                self,
                kind,
                f'/skills/{name}',
                execute,
                callback_group=group,
                cancel_callback=lambda _g: CancelResponse.ACCEPT,
                result_timeout=RESULT_TIMEOUT_S,
            )

    def _run(self, goal_handle, result_type, fn, feedback_type=None):
        result = result_type()
        try:
            options = options_of(goal_handle.request.options)
        except ValueError as exc:
            options = None
            error = str(exc)
        if options is None:
            result.event = Event(name='SKILL_ERROR', detail=error, reasons=[error])
            goal_handle.abort()
            return result

        def feedback(tick, obs):
            if feedback_type is not None:
                msg = feedback_type()
                msg.tick = tick
                goal_handle.publish_feedback(msg)

        r = fn(options, dict(feedback=feedback, cancelled=lambda: goal_handle.is_cancel_requested))
        fill_result(result, r)
        if hasattr(result, 'holding'):
            result.holding = bool(r.extra.get('holding', False))
            result.opening = float(r.extra.get('opening', 0.0))
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.succeed()
        return result

    def _move_joints(self, goal_handle):
        g = goal_handle.request
        return self._run(
            goal_handle,
            MoveJoints.Result,
            lambda o, run: self.skills.move_joints(g.arm, list(g.positions), g.speed, o, **run),
            MoveJoints.Feedback,
        )

    def _move_eef(self, goal_handle):
        g = goal_handle.request
        quat = (
            [g.orientation.w, g.orientation.x, g.orientation.y, g.orientation.z]
            if g.use_orientation
            else None
        )
        position = [g.position.x, g.position.y, g.position.z]
        return self._run(
            goal_handle,
            MoveEef.Result,
            lambda o, run: self.skills.move_eef(
                g.arm, position, quat, g.speed, o, g.cartesian, **run
            ),
            MoveEef.Feedback,
        )

    def _gripper(self, goal_handle, skill: str, default: float):
        g = goal_handle.request
        target = default if g.target < 0 else g.target
        return self._run(
            goal_handle,
            Gripper.Result,
            lambda o, run: self.skills.gripper(skill, g.arm, target, o, **run),
            Gripper.Feedback,
        )

    def _open(self, goal_handle):
        return self._gripper(goal_handle, 'open_gripper', 1.0)

    def _close(self, goal_handle):
        return self._gripper(goal_handle, 'close_gripper', 0.0)

    def _home(self, goal_handle):
        g = goal_handle.request
        return self._run(
            goal_handle,
            Home.Result,
            lambda o, run: self.skills.home(g.arm, o, **run),
            Home.Feedback,
        )

    def _controller(self, goal_handle):
        g = goal_handle.request
        self.reactive.cameras = list(g.cameras)
        hz = g.camera_hz if g.camera_hz > 0 else (g.hz or 25.0)
        self.reactive.camera_every = max(1, int(round(25.0 / hz)))
        try:
            return self._run(
                goal_handle,
                RunController.Result,
                lambda o, run: self.skills.run_controller('', g.hz, o, **run),
                RunController.Feedback,
            )
        finally:
            self.reactive.cameras = []


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
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
