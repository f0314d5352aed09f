"""The skill server's ports over ROS: the worker's services (StationPort) and the kernel's
reactive_step (ReactivePort).

Calls wait on their futures while the node's MultiThreadedExecutor serves the responses on
other threads (reentrant callback group), so an action's execute callback may call services;
the worker's services of names.WORKER_LANES are called on lanes of their own
(harness_types.lanes), on the calling thread.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from harness_reactive.stage import ReactiveResult
from harness_types.camera import CameraView
from harness_types.convert import (
    camera_view_of,
    point_msg,
    quat_msg,
    robot_state_msg,
    robot_state_of,
)
from harness_types.lanes import LaneClient, LaneUnavailableError
from harness_types.robot_state import RobotState
from harness_types.wait import wait_future
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from harness_msgs.msg import Command
from harness_msgs.srv import Fk, Ik, Observe, Plan, Predict, ReactiveStep, State, Tick
from harness_skills.port import Path, Solved, TickOutcome
from harness_types import names


class ServiceError(RuntimeError):
    """A service did not answer."""


def call(client, request, timeout: float):
    """Call a service and wait for its answer (from a callback on a multi-threaded executor)."""
    # A request sent before the server is discovered is lost: wait for the server first.
    if not client.service_is_ready() and not client.wait_for_service(timeout_sec=timeout):
        raise ServiceError(f'{client.srv_name} is not available')
    future = client.call_async(request)
    try:
        return wait_future(future, timeout)
    except TimeoutError:
        client.remove_pending_request(future)
        raise ServiceError(f'{client.srv_name} did not answer within {timeout:g} s') from None


WORKER_CLIENTS = {
    'tick': Tick,
    'state': State,
    'ik': Ik,
    'fk': Fk,
    'plan': Plan,
    'observe': Observe,
    'predict': Predict,
}


class RosStationPort:
    """The worker's services; `use_local(worker)` when the worker node runs in this process
    beside the skill server (`harness run`, `harness serve`)."""

    def __init__(self, node: Node, timeout: float) -> None:
        group = ReentrantCallbackGroup()
        self.timeout = timeout
        self.node = node
        self.clients = {
            name: node.create_client(kind, names.worker_service(name), callback_group=group)
            for name, kind in WORKER_CLIENTS.items()
            if name not in names.WORKER_LANES
        }
        # The worker's lanes, each made at its first call: a worker beside us needs none.
        self._lanes: dict[str, LaneClient] | None = {}  # None once closed
        self._making_lane = threading.Lock()
        self._beside: Any = None  # the worker node in this process, once use_local names it

    def use_local(self, worker: Any) -> None:
        """Call the worker node beside us directly: its `call_local` (the service's own handler
        under its lock, without the round trip through two executors and the middleware), its
        `tick_local` (a tick without the messages) and its `state_local` (the state without
        them). Its services still serve everyone else."""
        self._beside = worker

    def call(self, service: str, request):
        if self._beside is not None:
            return self._beside.call_local(service, request)
        if service not in names.WORKER_LANES:
            return call(self.clients[service], request, self.timeout)
        with self._making_lane:
            if self._lanes is None:  # (a lane made now would outlive its node)
                raise ServiceError(f'worker/{service}: the port is closed')
            lane = self._lanes.get(service)
            if lane is None:
                lane = self._lanes[service] = LaneClient(
                    names.lane_node(self.node.get_name(), f'{names.WORKER}_{service}'),
                    self.node,
                    WORKER_CLIENTS[service],
                    names.worker_service(service),
                )
        try:
            return lane.call(request, self.timeout, wait_s=self.timeout)
        except LaneUnavailableError as exc:
            raise ServiceError(str(exc)) from None
        except TimeoutError:
            raise ServiceError(
                f'{lane.srv_name} did not answer within {self.timeout:g} s'
            ) from None

    def close(self) -> None:
        """The worker's lanes leave the graph (the node's own clients go with the node)."""
        with self._making_lane:
            for lane in (self._lanes or {}).values():
                lane.close()
            self._lanes = None

    def tick(self, command: np.ndarray) -> TickOutcome:
        if self._beside is not None:
            r = self._beside.tick_local(command)
            return TickOutcome(r.accepted, list(r.reasons), r.state, r.episode_ended)
        r = self.call('tick', Tick.Request(command=Command(positions=[float(v) for v in command])))
        return TickOutcome(
            r.accepted, list(r.reasons), robot_state_of(r.state), bool(r.episode_ended)
        )

    def observe_state(self) -> RobotState:
        if self._beside is not None:  # the same state, without the message and back
            return self._beside.state_local()
        return robot_state_of(self.call('state', State.Request()).state)

    def ik(self, arm, position, quat, seed) -> Solved:
        req = Ik.Request(arm=arm, position=point_msg(position))
        if quat is not None:
            req.use_orientation, req.orientation = True, quat_msg(quat)
        if seed is not None:
            req.seed = [float(v) for v in seed]
        r = self.call('ik', req)
        return Solved(r.success, np.array(r.joints), r.message)

    def tcp_of(self, arm: str, joints: np.ndarray) -> np.ndarray:
        r = self.call('fk', Fk.Request(arm=arm, joints=[float(v) for v in joints]))
        p = r.tcp.position
        return np.array([p.x, p.y, p.z])

    def plan(self, arm: str, goal: np.ndarray) -> Path:
        r = self.call('plan', Plan.Request(arm=arm, joint_goal=[float(v) for v in goal]))
        points = np.array(r.waypoints).reshape(-1, 6) if r.waypoint_count else np.zeros((0, 6))
        return Path(r.success, list(points), r.message)

    def views(self, cameras: tuple[str, ...], depth: bool) -> list[CameraView]:
        r = self.call('observe', Observe.Request(cameras=list(cameras), depth=depth))
        if not r.success:
            raise ServiceError(f'worker/observe: {r.message}')
        return [camera_view_of(v) for v in r.views]


class RosReactivePort:
    """The kernel's reactive_step, called once per tick while program code is active. While a
    controller with cameras runs, their views go with the calls that are due."""

    def __init__(self, lane: LaneClient, station: RosStationPort, timeout: float) -> None:
        self._lane = lane
        self.station = station
        self.timeout = timeout
        self.cameras: list[str] = []
        self.camera_every = 1
        self._calls = 0
        self._requests = threading.local()

    def step(
        self, execution_id: str, skill: str, obs: RobotState, call_controller: bool
    ) -> ReactiveResult:
        # One request per thread, written over each tick (a new one builds a default robot
        # state only to replace it); rclpy has converted it once send_request returns.
        req = getattr(self._requests, 'request', None)
        if req is None:
            req = self._requests.request = ReactiveStep.Request()
        req.execution_id, req.skill = execution_id, skill
        req.call_controller = call_controller
        robot_state_msg(obs, req.state)
        req.views = []
        if self.cameras and call_controller:
            if self._calls % self.camera_every == 0:
                r = self.station.call('observe', Observe.Request(cameras=self.cameras, depth=True))
                if not r.success:  # the controller would read obs.images without them
                    return ReactiveResult(fault=f'worker/observe: {r.message}')
                req.views = list(r.views)
            self._calls += 1
        try:
            r = self._lane.call(req, self.timeout)
        except LaneUnavailableError as exc:
            return ReactiveResult(fault=str(exc))
        except TimeoutError:
            detail = f'{self._lane.srv_name} did not answer within {self.timeout:g} s'
            return ReactiveResult(fault=detail)
        targets, k = {}, 0
        for key, n in zip(r.target_keys, r.target_lengths, strict=True):
            targets[key] = np.array(r.target_values[k : k + n])
            k += n
        return ReactiveResult(
            r.fault_reason if r.fault else '',
            r.guard_fired,
            r.guard_action,
            r.guard_detail,
            r.until_satisfied,
            targets,
        )

    def use_cameras(self, cameras: list[str], every: int) -> None:
        """Send these cameras' views with every `every`-th due controller call."""
        self.cameras, self.camera_every, self._calls = list(cameras), max(1, every), 0
