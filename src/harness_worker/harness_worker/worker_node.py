"""The worker node: maps ROS services and topics onto the worker core (`worker.py`).

Services (worker/...): reset, tick, state, observe, fk, ik, plan, outcome, profile.
Topics: worker/shield_rejections, harness/markers (where the shield rejected); with a simulated
station (the worker owns the world) also joint_states, /tf (each link relative to its parent
joint, as robot_state_publisher; computed from the state after the tick's last physics step),
/tf_static (fixed frames: bases, table, cameras and their optical frames; latched), /clock
(episode time), robot_description (latched), cameras/<name>/image_raw, image_raw/compressed
(JPEG, at its own rate) and camera_info (rendered only while subscribed). With a station that
is not the worker's (ros2_control) those come from the robot's own drivers. Parameters:
harness_types.config.WorkerConfig.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import sys
import threading
import traceback
from dataclasses import replace

import numpy as np
import rclpy
from arx_x5_description.embodiment import ARMS, load_embodiment
from geometry_msgs.msg import TransformStamped
from harness_bench.randomization import NO_VARIATION, RandomizeError, SceneVariation, parse_axes
from harness_policy.client import PolicyClient
from harness_policy.stream import PolicyRun
from harness_types.config import WorkerConfig, declare_section
from harness_types.convert import (
    camera_info_msg,
    camera_view_msg,
    compressed_image_msg,
    image_msg,
    jpeg_of,
    marker_array_msg,
    pose_msg,
    quat_of,
    robot_state_msg,
    robot_state_of,
    stamp,
)
from harness_types.lanes import LaneService
from harness_types.markers import rejection_marks
from harness_types.plugins import PluginError
from harness_types.process import leave_graph
from harness_types.robot_state import RobotState
from harness_types.tf_tree import TfTree
from harness_types.transforms import matrix_to_quat, quat_to_matrix
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.utilities import get_default_context
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

from arx_x5_description.urdf import station_urdf
from harness_msgs.msg import ShieldRejection
from harness_msgs.srv import (
    Fk,
    Ik,
    Observe,
    Outcome,
    Plan,
    Predict,
    Profile,
    Reset,
    State,
    Tick,
)
from harness_types import names
from harness_worker.kinematics import Pose as KinPose
from harness_worker.scene_variation import moved_frames
from harness_worker.state_messages import StateMessages
from harness_worker.station import make_station
from harness_worker.worker import TickResult, Worker, WorkerError
from harness_worker.world_model import SimulatedFuture, WorldModelError


def _kin_pose(pose: KinPose):
    return pose_msg(pose.position, matrix_to_quat(pose.rotation))


def refuse(response, detail: str) -> bool:
    """Fill a worker service's response as a refusal saying `detail`; False for a response
    that cannot say it (state, profile)."""
    if hasattr(response, 'reasons'):  # tick
        response.accepted, response.reasons = False, [detail]
    elif hasattr(response, 'accepted'):  # outcome
        response.accepted, response.message = False, detail
    elif hasattr(response, 'success'):  # reset, observe, fk, ik, plan
        response.success, response.message = False, detail
    else:
        return False
    return True


class WorkerNode(Node):
    """The only node that moves the robot. Without a `worker`, it builds one on the installed
    embodiment with the backend its `backend` parameter names (PluginError if it cannot)."""

    def __init__(self, worker: Worker | None = None, **kwargs) -> None:
        super().__init__(names.WORKER, **kwargs)
        self.config = declare_section(self, WorkerConfig)
        if worker is None:
            emb = load_embodiment()
            urdf = station_urdf(config=emb.path)
            worker = Worker(emb, urdf, make_station(self.config.backend, emb, urdf, self))
        self.worker = worker
        worker.end_on_success = self.config.end_on_success
        # (endpoint, timeout) -> a connection: the reply timeout bounds the connect too
        self.world_model = SimulatedFuture(worker, lambda url, t: PolicyClient(url, t, t))
        emb, urdf = worker.emb, worker.urdf
        self._joint_names = emb.all_joint_names()
        self.rejections = self.create_publisher(ShieldRejection, names.SHIELD_REJECTIONS, 10)
        self.markers = self.create_publisher(MarkerArray, names.MARKERS, 10)
        self._rejection_ids = itertools.count()
        self.owns_world = worker.station.simulated
        self._frames_published = threading.Event()  # the last batch of camera frames is out
        self._frames_published.set()
        # The messages of the robot's state it published, by topic: one for the reset and one
        # per tick on /clock, and on /joint_states and /tf where someone listens. A recording
        # checks its bag against them.
        self.state_messages_published: dict[str, int] = {}
        if self.owns_world:
            self._tf_tree = TfTree(urdf)
            self._state_messages = StateMessages(self._joint_names, self._tf_tree)
            depth = names.RECORDED_DEPTH
            self.joint_states = self.create_publisher(JointState, names.JOINT_STATES, depth)
            self.tf = self.create_publisher(TFMessage, names.TF, depth)
            self.clock = self.create_publisher(Clock, names.CLOCK, depth)
            state = (self.joint_states, self.tf, self.clock)
            self._state_topics = tuple(p.topic_name for p in state)
            self.state_messages_published = dict.fromkeys(self._state_topics, 0)
            latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self.create_publisher(String, names.ROBOT_DESCRIPTION, latched).publish(
                String(data=urdf)
            )
            self.static = self.create_publisher(TFMessage, names.TF_STATIC, latched)
            self._publish_static(NO_VARIATION)
            self.images = {
                c: self.create_publisher(Image, names.camera_image(c), 2) for c in emb.cameras
            }
            # The JPEG frames and their calibration are recorded (the bag, the datasets' videos):
            # kept as deep as the state, so a recorder that lags under load loses none (at a
            # depth of 2, a CI run's bag held 2 of an episode's 5 frames). The raw images are
            # for live viewers only.
            self.compressed = {
                c: self.create_publisher(CompressedImage, names.camera_compressed(c), depth)
                for c in emb.cameras
            }
            self.infos = {
                c: self.create_publisher(CameraInfo, names.camera_info(c), depth)
                for c in emb.cameras
            }
        handlers = {
            'reset': (Reset, self._reset),
            'tick': (Tick, self._tick),
            'state': (State, self._state),
            'observe': (Observe, self._observe),
            'fk': (Fk, self._fk),
            'ik': (Ik, self._ik),
            'plan': (Plan, self._plan),
            'outcome': (Outcome, self._outcome),
            'profile': (Profile, self._profile),
            'predict': (Predict, self._predict),
        }
        # One request at a time (the core is not thread-safe): those of WORKER_LANES each on a
        # lane of its own (its node and thread, beside the executor), the rest in a group of
        # their own, since the default group serves /clock (use_sim_time), which a tick waits
        # on. The lock also holds off the calls of a client in this process (call_local).
        self._handlers = handlers
        self._core = threading.Lock()
        services = MutuallyExclusiveCallbackGroup()
        self.lanes = []
        for name in names.WORKER_SERVICES:
            kind, handler = handlers[name]
            serve = functools.partial(self._locked, handler)
            if name in names.WORKER_LANES:
                lane = names.lane_node(names.WORKER, name)
                self.lanes.append(LaneService(lane, self, kind, names.worker_service(name), serve))
            else:
                self.create_service(
                    kind, names.worker_service(name), serve, callback_group=services
                )

    def close(self) -> None:
        """Stop serving the lanes, then close the core (its simulator, renderers, backend): a
        lane's request after that would reach a closed simulator."""
        self._close_lanes()
        self.worker.close()

    def _close_lanes(self) -> None:
        # (none yet where __init__ failed, a bad parameter say: rclpy's shutdown destroys the
        # context's nodes, this one too)
        lanes, self.lanes = getattr(self, 'lanes', []), []
        for lane in lanes:
            lane.close()

    def destroy_node(self) -> None:
        self._close_lanes()
        super().destroy_node()

    def _locked(self, handler, request, response):
        with self._core:
            try:
                return handler(request, response)
            except Exception as exc:  # a bug: answer with it rather than leave the caller waiting
                detail = f'the worker failed: {type(exc).__name__}: {exc}'
                if not refuse(response, detail):
                    raise
                self.get_logger().error(f'{detail}\n{traceback.format_exc()}')
                return response

    def call_local(self, service: str, request):
        """worker/<service> for a client in this process (the skill server started beside this
        node): the service's own handler under the same lock, the same request and response
        messages, without the round trip through two executors and the middleware (~3 ms of a
        4 ms tick; perf/skills.py)."""
        kind, handler = self._handlers[service]
        return self._locked(handler, request, kind.Response())

    def tick_local(self, command: np.ndarray) -> TickResult:
        """worker/tick for a client in this process, without the messages: converting the
        state to a message and back cost as much as the physics of a tick (perf/skills.py).
        Under the same lock, publishing the same topics; a worker error (no episode) is a
        refusal that says it, as the service answers."""
        with self._core:
            try:
                return self._tick_core(np.asarray(command, dtype=float))
            except Exception as exc:
                detail = str(exc)
                if not isinstance(exc, WorkerError):
                    detail = f'the worker failed: {type(exc).__name__}: {exc}'
                    self.get_logger().error(f'{detail}\n{traceback.format_exc()}')
                # the state the service's refusal carries: an empty one
                return TickResult(False, [detail], robot_state_of(Tick.Response().state), False)

    def state_local(self) -> RobotState:
        """worker/state for a client in this process, without the messages (the skill server
        reads the state at each execution's start): under the same lock; without an episode
        the empty state the service answers."""
        with self._core:
            try:
                return self.worker.state()
            except WorkerError:
                return robot_state_of(State.Response().state)

    # Topics -------------------------------------------------------------------------------

    def _publish_state(self, state: RobotState | None = None) -> None:
        if not self.owns_world:
            return
        state = state or self.worker.state()
        joint_states_topic, tf_topic, clock_topic = self._state_topics
        counts = self.state_messages_published
        self.clock.publish(self._state_messages.clock(state.time))
        counts[clock_topic] += 1
        # /joint_states and /tf are written into bytes serialized once (state_messages.py), and
        # only when someone listens.
        joint_states, tf = (p.get_subscription_count() > 0 for p in (self.joint_states, self.tf))
        positions = self._positions(state) if joint_states or tf else {}
        if joint_states:
            values = list(positions.values())
            self.joint_states.publish(self._state_messages.joint_states(values, state.time))
            counts[joint_states_topic] += 1
        if tf:
            self.tf.publish(self._state_messages.tf(positions, state.time))
            counts[tf_topic] += 1
        if self.config.publish_cameras:
            self._publish_cameras(state.step)

    def _publish_cameras(self, step: int) -> None:
        """Each camera's frame, rendered only for a topic someone subscribes to, at its rate:
        image_raw every camera_every_ticks, image_raw/compressed every compressed_every_ticks;
        camera_info with each frame. The frames are rendered, encoded and published on the
        station's render thread while the ticks go on; one batch is in flight at most (a slow
        renderer holds the ticks back rather than queueing frames)."""
        raw_due = step % self.config.camera_every_ticks == 0
        every = self.config.compressed_every_ticks
        compressed_due = every > 0 and step % every == 0
        if not raw_due and not compressed_due:
            return
        wanted = {}
        for cam, raw in self.images.items():
            raw_wanted = raw_due and raw.get_subscription_count() > 0
            jpeg_wanted = compressed_due and self.compressed[cam].get_subscription_count() > 0
            if raw_wanted or jpeg_wanted:
                wanted[cam] = (raw_wanted, jpeg_wanted)
        if not wanted:
            return
        self.frames_published()
        published = self._frames_published = threading.Event()
        views = self.worker.station.render_later(list(wanted))
        views.add_done_callback(lambda done: self._publish_frames(done, wanted, published))

    def _publish_frames(self, views, wanted: dict, published: threading.Event) -> None:
        try:
            for view in views.result():
                raw_wanted, jpeg_wanted = wanted[view.name]
                if raw_wanted:
                    self.images[view.name].publish(
                        image_msg(view.rgb, 'rgb8', view.time, view.frame_id)
                    )
                if jpeg_wanted:
                    msg = compressed_image_msg(jpeg_of(view.rgb), 'jpeg', view.time, view.frame_id)
                    self.compressed[view.name].publish(msg)
                self.infos[view.name].publish(camera_info_msg(view))
        except Exception:  # a lost frame must not stop the ticks; it is said
            self.get_logger().error(f'camera frames not published:\n{traceback.format_exc()}')
        finally:
            published.set()

    def frames_published(self) -> None:
        """Wait until the camera frames asked for so far are published (the episode's outcome
        is answered after its last frames, so a recording holds them before the end)."""
        self._frames_published.wait()

    def _positions(self, state: RobotState) -> dict[str, float]:
        """The 16 joint positions by URDF name (both fingers of each gripper). The second
        finger is its URDF mimic rule (gripper_mimic = gripper, 1:1): what robot_state_publisher and
        every reader of the URDF computes, so /joint_states and /tf agree with them (the
        simulator's second finger, coupled by a soft constraint, was up to 6 mm off)."""
        values: list[float] = []
        for a in ARMS:
            arm = state.arm(a)
            leader = float(arm.fingers[0])
            values += [float(q) for q in arm.joints] + [leader, leader]
        return dict(zip(self._joint_names, values, strict=True))

    def _publish_static(self, variation: SceneVariation) -> None:
        frames = moved_frames(self._tf_tree.static(), variation)
        self.static.publish(TFMessage(transforms=self._transforms(frames, stamp(0))))

    @staticmethod
    def _transforms(transforms, now) -> list[TransformStamped]:
        out = []
        for tf in transforms:
            t = TransformStamped()
            t.header.stamp = now
            t.header.frame_id = tf.parent
            t.child_frame_id = tf.child
            tr, rot = t.transform.translation, t.transform.rotation
            tr.x, tr.y, tr.z = (float(v) for v in tf.translation)
            rot.w, rot.x, rot.y, rot.z = (float(v) for v in tf.quat)
            out.append(t)
        return out

    # Services -----------------------------------------------------------------------------

    def _reset(self, request: Reset.Request, response: Reset.Response) -> Reset.Response:
        try:
            axes = parse_axes(request.randomize)
            result = self.worker.reset(
                request.task, request.layout, request.seed, request.token, axes
            )
        except (WorkerError, RandomizeError, ValueError) as exc:  # ValueError: a last resort
            response.success, response.message = False, str(exc)
            return response
        response.success = True
        response.instruction, response.description = result.instruction, result.description
        robot_state_msg(result.state, response.state)
        response.token = result.token
        # each episode's rejection markers numbered from 0, as on a new station
        self._rejection_ids = itertools.count()
        if self.owns_world:  # the table and the cameras stand where this episode has them
            self._publish_static(result.variation)
        self._publish_state()
        return response

    def _tick(self, request: Tick.Request, response: Tick.Response) -> Tick.Response:
        try:
            result = self._tick_core(np.asarray(request.command.positions, dtype=float))
        except WorkerError as exc:
            response.accepted, response.reasons = False, [str(exc)]
            return response
        response.accepted, response.reasons = result.accepted, result.reasons
        robot_state_msg(result.state, response.state)
        response.episode_ended = result.episode_ended
        return response

    def _tick_core(self, command: np.ndarray) -> TickResult:
        """One tick and what it publishes (state, or the shield's rejection)."""
        result = self.worker.tick(command)
        if result.accepted:
            self._publish_state(result.state)
        elif not result.episode_ended:
            self.rejections.publish(
                ShieldRejection(
                    step=result.state.step,
                    sim_time=result.state.time,
                    command=[float(v) for v in command],
                    reasons=result.reasons,
                )
            )
            self._mark_rejection(result)
        return result

    def _mark_rejection(self, result) -> None:
        """A marker at each rejected arm's TCP (both when no arm is named), with the reason."""
        sequence = next(self._rejection_ids)
        reason = result.reasons[0] if result.reasons else 'rejected'
        marks = []
        for k, arm in enumerate(result.rejected_arms or ARMS):
            tcp = result.state.arm(arm).tcp_position
            marks += rejection_marks(2 * sequence + k, arm, tcp, reason)
        self.markers.publish(marker_array_msg(marks, result.state.time))

    def _state(self, _request: State.Request, response: State.Response) -> State.Response:
        with contextlib.suppress(WorkerError):  # no episode yet: an empty state
            robot_state_msg(self.worker.state(), response.state)
        return response

    def _observe(self, request: Observe.Request, response: Observe.Response) -> Observe.Response:
        cameras = list(request.cameras) or list(self.worker.emb.cameras)
        try:
            views = self.worker.observe(cameras, request.depth, request.segmentation)
        except (WorkerError, ValueError) as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success = True
        response.views = [camera_view_msg(v) for v in views]
        return response

    def _predict(self, request: Predict.Request, response: Predict.Response) -> Predict.Response:
        policy = None
        if request.policy_endpoint:
            policy = PolicyRun(
                request.policy,
                request.policy_endpoint,
                request.instruction,
                request.action_hz,
                tuple(request.policy_cameras),
                request.policy_depth,
                request.policy_timeout_seconds,
            )
        actions = np.asarray(request.actions, dtype=float)
        try:
            prediction = self.world_model.predict(
                request.horizon_seconds,
                None if policy is not None else actions.reshape(-1, 14),
                policy,
                tuple(request.cameras),
            )
        except (WorldModelError, WorkerError, ValueError, RuntimeError, OSError) as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.model = True, prediction.model
        response.times = [float(t) for t in prediction.times]
        response.states = [float(v) for v in prediction.states.ravel()]
        response.views = [camera_view_msg(v) for v in prediction.views]
        response.stopped = prediction.stopped
        return response

    def _fk(self, request: Fk.Request, response: Fk.Response) -> Fk.Response:
        try:
            link6, tcp = self.worker.fk(request.arm, np.asarray(request.joints, dtype=float))
        except WorkerError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.link6, response.tcp = True, _kin_pose(link6), _kin_pose(tcp)
        return response

    def _ik(self, request: Ik.Request, response: Ik.Response) -> Ik.Response:
        seed = np.asarray(request.seed, dtype=float) if len(request.seed) else None
        try:
            rotation = (
                quat_to_matrix(quat_of(request.orientation)) if request.use_orientation else None
            )
            position = np.array([request.position.x, request.position.y, request.position.z])
            result = self.worker.ik(request.arm, position, rotation, seed)
        except (WorkerError, ValueError) as exc:
            response.success, response.message = False, str(exc)
            return response
        if (
            result.ok
            and request.collision_free
            and self.worker.collides(request.arm, result.joints)
        ):
            result = replace(result, ok=False, reason=f'the {request.arm} arm would collide there')
        response.success, response.message = result.ok, result.reason
        response.joints = result.joints.tolist()
        response.position_error = float(result.position_error)
        response.rotation_error = float(result.rotation_error)
        return response

    def _plan(self, request: Plan.Request, response: Plan.Response) -> Plan.Response:
        goal = np.asarray(request.joint_goal, dtype=float) if len(request.joint_goal) else None
        position = rotation = None
        try:
            if goal is None:
                t = request.tcp_goal.position
                position = np.array([t.x, t.y, t.z])
                if request.use_orientation:
                    rotation = quat_to_matrix(quat_of(request.tcp_goal.orientation))
            result = self.worker.plan(request.arm, goal, position, rotation)
        except (WorkerError, ValueError) as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = result.ok, result.reason
        response.waypoint_count = len(result.path)
        response.waypoints = [float(v) for q in result.path for v in q]
        return response

    def _outcome(self, request: Outcome.Request, response: Outcome.Response) -> Outcome.Response:
        self.frames_published()
        try:
            outcome = self.worker.outcome(request.token, request.end)
        except WorkerError as exc:
            response.accepted, response.message = False, str(exc)
            return response
        response.accepted = True
        response.success, response.score = outcome.success, outcome.score
        response.detail = outcome.detail
        return response

    def _profile(self, _request: Profile.Request, response: Profile.Response) -> Profile.Response:
        p = self.worker.profile()
        response.kind, response.robot, response.command_layout = p.kind, p.robot, p.command_layout
        response.control_hz, response.physics_hz = p.control_hz, p.physics_hz
        response.physics_steps_per_tick, response.backend = p.physics_steps_per_tick, p.backend
        return response


def main(args: list[str] | None = None) -> int:
    rclpy.init(args=args)
    try:
        node = WorkerNode()
    except (PluginError, ValueError, RuntimeError) as exc:
        print(f'worker: {exc}', file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    # Several threads: a backend that talks to ROS (ros2_control) waits inside the services
    # for its subscriptions.
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):  # Ctrl-C, SIGTERM
        pass
    finally:
        node.close()
        leave_graph([node], get_default_context())
    return 0


if __name__ == '__main__':
    sys.exit(main())
