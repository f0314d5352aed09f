"""Station and reactive ports over ROS services (the skill server's view of the graph).

Calls wait on their futures while the node's MultiThreadedExecutor serves the responses on
other threads (reentrant callback group), so an action's execute callback may call services.
"""

from __future__ import annotations

import threading

import numpy as np
from geometry_msgs.msg import Point, Quaternion
from harness_reactive.observation import ARMS, ArmObservation, Observation
from harness_reactive.stage import ReactiveResult
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from harness_msgs.msg import Command, RobotState
from harness_msgs.srv import Fk, Ik, Observe, Plan, ReactiveStep, State, Tick
from harness_skills.port import Path, Solved, TickOutcome

SERVICE_TIMEOUT_S = 30.0


class ServiceError(RuntimeError):
    """A service did not answer."""


def observation_of(state: RobotState, images: dict | None = None) -> Observation:
    arms = {}
    for a in ARMS:
        s = getattr(state, a)
        q = s.tcp.orientation
        arms[a] = ArmObservation(
            np.array(s.joints),
            float(s.gripper),
            np.array([s.tcp.position.x, s.tcp.position.y, s.tcp.position.z]),
            np.array([q.w, q.x, q.y, q.z]),
            np.array([s.link6.position.x, s.link6.position.y, s.link6.position.z]),
            float(s.grip_force),
        )
    return Observation(int(state.step), float(state.sim_time), arms, images or {})


def call(client, request, timeout: float = SERVICE_TIMEOUT_S):
    """Call a service and wait for its answer (from a callback on a multi-threaded executor)."""
    # A request sent before the server is discovered is lost: wait for the server first.
    if not client.service_is_ready() and not client.wait_for_service(timeout_sec=timeout):
        raise ServiceError(f'{client.srv_name} is not available')
    done = threading.Event()
    future = client.call_async(request)
    future.add_done_callback(lambda _f: done.set())
    if not done.wait(timeout):
        client.remove_pending_request(future)
        raise ServiceError(f'{client.srv_name} did not answer within {timeout:.0f} s')
    return future.result()


class RosStationPort:
    def __init__(self, node: Node, worker_ns: str = '/worker') -> None:
        group = ReentrantCallbackGroup()
        self._c = {
            name: node.create_client(kind, f'{worker_ns}/{name}', callback_group=group)
            for name, kind in [
                ('tick', Tick),
                ('state', State),
                ('ik', Ik),
                ('fk', Fk),
                ('plan', Plan),
                ('observe', Observe),
            ]
        }
        self._last_state: RobotState | None = None

    def wait(self, timeout: float) -> bool:
        return all(c.wait_for_service(timeout_sec=timeout) for c in self._c.values())

    def tick(self, command: np.ndarray) -> TickOutcome:
        r = call(
            self._c['tick'], Tick.Request(command=Command(positions=[float(v) for v in command]))
        )
        return TickOutcome(r.accepted, list(r.reasons), observation_of(r.state), r.episode_ended)

    def observe_state(self) -> Observation:
        return observation_of(call(self._c['state'], State.Request()).state)

    def ik(self, arm, position, quat, seed) -> Solved:
        req = Ik.Request(
            arm=arm,
            position=Point(x=float(position[0]), y=float(position[1]), z=float(position[2])),
        )
        if quat is not None:
            req.use_orientation = True
            req.orientation = Quaternion(
                w=float(quat[0]), x=float(quat[1]), y=float(quat[2]), z=float(quat[3])
            )
        if seed is not None:
            req.seed = [float(v) for v in seed]
        r = call(self._c['ik'], req)
        return Solved(r.success, np.array(r.joints), r.message)

    def tcp_of(self, arm: str, joints: np.ndarray) -> np.ndarray:
        r = call(self._c['fk'], Fk.Request(arm=arm, joints=[float(v) for v in joints]))
        p = r.tcp.position
        return np.array([p.x, p.y, p.z])

    def plan(self, arm: str, goal: np.ndarray) -> Path:
        r = call(self._c['plan'], Plan.Request(arm=arm, joint_goal=[float(v) for v in goal]))
        points = np.array(r.waypoints).reshape(-1, 6) if r.waypoint_count else np.zeros((0, 6))
        return Path(r.success, list(points), r.message)

    def images(self, cameras: list[str]) -> dict[str, object]:
        r = call(
            self._c['observe'], Observe.Request(cameras=cameras, depth=True, segmentation=True)
        )
        return {v.name: v for v in r.views}


class RosReactivePort:
    """The kernel's reactive_step, called once per tick while program code is active."""

    def __init__(self, node: Node, service: str = '/kernel/reactive_step') -> None:
        self._client = node.create_client(
            ReactiveStep, service, callback_group=ReentrantCallbackGroup()
        )
        self.cameras: list[str] = []
        self.camera_every = 1
        self.station: RosStationPort | None = None

    def step(self, execution_id: str, skill: str, obs: Observation) -> ReactiveResult:
        if not self._client.service_is_ready():
            return ReactiveResult(fault=f'{self._client.srv_name} is not available')
        req = ReactiveStep.Request(
            execution_id=execution_id, skill=skill, step=obs.step, time=obs.time
        )
        signals = obs.signals()
        req.signal_names = list(signals)
        req.signal_values = [float(v) for v in signals.values()]
        req.state = _state_msg(obs)
        if self.cameras and self.station is not None and obs.step % self.camera_every == 0:
            req.views = list(self.station.images(self.cameras).values())
        try:
            r = call(self._client, req)
        except ServiceError as exc:
            return ReactiveResult(fault=str(exc))
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


def _state_msg(obs: Observation) -> RobotState:
    msg = RobotState(step=obs.step, sim_time=obs.time)
    for a in ARMS:
        o, s = obs.arms[a], getattr(msg, a)
        s.name = a
        s.joints = [float(v) for v in o.joints]
        s.gripper = float(o.gripper)
        s.grip_force = float(o.grip_force)
        s.tcp.position.x, s.tcp.position.y, s.tcp.position.z = (float(v) for v in o.tcp_position)
        s.tcp.orientation.w, s.tcp.orientation.x, s.tcp.orientation.y, s.tcp.orientation.z = (
            float(v) for v in o.tcp_quat
        )
        s.link6.position.x, s.link6.position.y, s.link6.position.z = (
            float(v) for v in o.link6_position
        )
    return msg
