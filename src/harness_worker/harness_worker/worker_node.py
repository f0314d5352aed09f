"""The worker node: maps ROS services and topics onto the worker core (`worker.py`).

Services (under /worker): reset, tick, state, observe, fk, ik, plan, outcome, profile.
Topics: /joint_states, /tf, /clock (sim time), /robot_description (latched),
/cameras/<name>/image_raw and camera_info (rendered only while subscribed),
/worker/shield_rejections.
"""

from __future__ import annotations

import contextlib
import sys

import numpy as np
import rclpy
from arx_x5_description.embodiment import ARMS, load_embodiment
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Pose, Quaternion, TransformStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from arx_x5_description.urdf import station_urdf
from harness_msgs.msg import ArmState, CameraView, RobotState, ShieldRejection
from harness_msgs.srv import Fk, Ik, Observe, Outcome, Plan, Profile, Reset, State, Tick
from harness_worker.kinematics import Pose as KinPose
from harness_worker.records import ArmRecord, CameraImage, StateRecord
from harness_worker.worker import Worker, WorkerError


def _stamp(sim_time: float) -> Time:
    sec = int(sim_time)
    return Time(sec=sec, nanosec=int(round((sim_time - sec) * 1e9)))


def _pose(position: np.ndarray, quat_wxyz: np.ndarray) -> Pose:
    w, x, y, z = (float(v) for v in quat_wxyz)
    p = position
    return Pose(
        position=Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
        orientation=Quaternion(x=x, y=y, z=z, w=w),
    )


def _quat_of(rotation: np.ndarray) -> np.ndarray:
    import mujoco

    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.asarray(rotation, float).flatten())
    return q


def _kin_pose(pose: KinPose) -> Pose:
    return _pose(pose.position, _quat_of(pose.rotation))


def arm_msg(arm: ArmRecord) -> ArmState:
    return ArmState(
        name=arm.name,
        joints=arm.joints.tolist(),
        velocities=arm.velocities.tolist(),
        gripper=float(arm.gripper),
        link6=_pose(arm.link6_position, arm.link6_quat),
        tcp=_pose(arm.tcp_position, arm.tcp_quat),
        grip_force=float(arm.grip_force),
    )


def state_msg(state: StateRecord) -> RobotState:
    return RobotState(
        left=arm_msg(state.left),
        right=arm_msg(state.right),
        step=state.step,
        sim_time=state.sim_time,
    )


def _image(array: np.ndarray, encoding: str, step_bytes: int, stamp: Time, frame: str) -> Image:
    msg = Image(height=array.shape[0], width=array.shape[1], encoding=encoding, step=step_bytes)
    msg.header.stamp = stamp
    msg.header.frame_id = frame
    msg.data = array.tobytes()  # element-wise assignment of a numpy array is ~3000x slower
    return msg


def camera_info(view: CameraImage, stamp: Time) -> CameraInfo:
    h, w = view.rgb.shape[:2]
    info = CameraInfo(height=h, width=w, distortion_model='plumb_bob', d=[0.0] * 5)
    info.header.stamp = stamp
    info.header.frame_id = f'{view.name}_optical'
    info.k = [view.fx, 0.0, view.cx, 0.0, view.fy, view.cy, 0.0, 0.0, 1.0]
    info.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    info.p = [view.fx, 0.0, view.cx, 0.0, 0.0, view.fy, view.cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return info


def camera_view_msg(view: CameraImage, stamp: Time) -> CameraView:
    frame = f'{view.name}_optical'
    h, w = view.rgb.shape[:2]
    msg = CameraView(
        name=view.name,
        labels=list(view.labels),
        info=camera_info(view, stamp),
        pose=_pose(view.position, view.quat),
    )
    msg.rgb = _image(view.rgb, 'rgb8', 3 * w, stamp, frame)
    if view.depth is not None:
        msg.depth = _image(view.depth.astype(np.float32), '32FC1', 4 * w, stamp, frame)
    if view.segmentation is not None:
        msg.segmentation = _image(view.segmentation.astype(np.int32), '32SC1', 4 * w, stamp, frame)
    del h
    return msg


class WorkerNode(Node):
    """The only node that moves the robot."""

    def __init__(self, worker: Worker, urdf: str, **kwargs) -> None:
        super().__init__('worker', **kwargs)
        self.worker = worker
        self.declare_parameter('backend', 'mujoco')
        self.declare_parameter('publish_cameras', True)
        self.declare_parameter('camera_every_ticks', 5)
        self._publish_cameras = bool(self.get_parameter('publish_cameras').value)
        self._camera_every = max(1, int(self.get_parameter('camera_every_ticks').value))
        backend = self.get_parameter('backend').value
        if backend != 'mujoco':
            raise ValueError(f"backend {backend!r} is not available in this build; use 'mujoco'")
        emb = worker.emb
        self._joint_names = emb.all_joint_names()
        self._tf_frames = [f'{a}_link{i}' for a in ARMS for i in range(1, 9)] + [
            f'{a}_tcp' for a in ARMS
        ]
        self.joint_states = self.create_publisher(JointState, '/joint_states', 10)
        self.tf = self.create_publisher(TFMessage, '/tf', 10)
        self.clock = self.create_publisher(Clock, '/clock', 10)
        self.rejections = self.create_publisher(ShieldRejection, '~/shield_rejections', 10)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.create_publisher(String, '/robot_description', latched).publish(String(data=urdf))
        self.images = {
            c: self.create_publisher(Image, f'/cameras/{c}/image_raw', 2) for c in emb.cameras
        }
        self.infos = {
            c: self.create_publisher(CameraInfo, f'/cameras/{c}/camera_info', 2)
            for c in emb.cameras
        }
        for name, kind, handler in [
            ('reset', Reset, self._reset),
            ('tick', Tick, self._tick),
            ('state', State, self._state),
            ('observe', Observe, self._observe),
            ('fk', Fk, self._fk),
            ('ik', Ik, self._ik),
            ('plan', Plan, self._plan),
            ('outcome', Outcome, self._outcome),
            ('profile', Profile, self._profile),
        ]:
            self.create_service(kind, f'~/{name}', handler)

    # Topics -------------------------------------------------------------------------------

    def _publish_state(self, state: StateRecord | None = None) -> None:
        state = state or self.worker.state()
        stamp = _stamp(state.sim_time)
        self.clock.publish(Clock(clock=stamp))
        # Building /joint_states and /tf costs more than a physics tick: only when someone listens.
        if self.joint_states.get_subscription_count():
            self._publish_joint_states(state, stamp)
        if self.tf.get_subscription_count():
            self._publish_tf(stamp)
        if self._publish_cameras and state.step % self._camera_every == 0:
            for cam, pub in self.images.items():
                if pub.get_subscription_count() or self.infos[cam].get_subscription_count():
                    view = self.worker.station.render(cam, depth=False, segmentation=False)
                    msg = camera_view_msg(view, stamp)
                    pub.publish(msg.rgb)
                    self.infos[cam].publish(msg.info)

    def _publish_joint_states(self, state: StateRecord, stamp: Time) -> None:
        js = JointState(name=self._joint_names)
        js.header.stamp = stamp
        positions = []
        for a in ARMS:
            positions += state.arm(a).joints.tolist()
            positions += [
                state.finger_positions[f'{a}_joint7'],
                state.finger_positions[f'{a}_joint8'],
            ]
        js.position = positions
        self.joint_states.publish(js)

    def _publish_tf(self, stamp: Time) -> None:
        station = self.worker.station
        ids = [station.model.body(frame).id for frame in self._tf_frames]
        xpos, xquat = station.data.xpos[ids].tolist(), station.data.xquat[ids].tolist()
        transforms = []
        for frame, p, q in zip(self._tf_frames, xpos, xquat, strict=True):
            t = TransformStamped()
            t.header.stamp = stamp
            t.header.frame_id = 'world'
            t.child_frame_id = frame
            tr, rot = t.transform.translation, t.transform.rotation
            tr.x, tr.y, tr.z = p
            rot.w, rot.x, rot.y, rot.z = q
            transforms.append(t)
        self.tf.publish(TFMessage(transforms=transforms))

    # Services -----------------------------------------------------------------------------

    def _reset(self, request: Reset.Request, response: Reset.Response) -> Reset.Response:
        try:
            result = self.worker.reset(request.task, request.layout, request.seed, request.token)
        except WorkerError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success = True
        response.instruction, response.description = result.instruction, result.description
        response.state, response.token = state_msg(result.state), result.token
        self._publish_state()
        return response

    def _tick(self, request: Tick.Request, response: Tick.Response) -> Tick.Response:
        try:
            result = self.worker.tick(np.asarray(request.command.positions, dtype=float))
        except WorkerError as exc:
            response.accepted, response.reasons = False, [str(exc)]
            return response
        response.accepted, response.reasons = result.accepted, result.reasons
        response.state, response.episode_ended = state_msg(result.state), result.episode_ended
        if result.accepted:
            self._publish_state(result.state)
        else:
            self.rejections.publish(
                ShieldRejection(
                    step=result.state.step,
                    sim_time=result.state.sim_time,
                    command=[float(v) for v in request.command.positions],
                    reasons=result.reasons,
                )
            )
        return response

    def _state(self, _request: State.Request, response: State.Response) -> State.Response:
        with contextlib.suppress(WorkerError):  # no episode yet: an empty state
            response.state = state_msg(self.worker.state())
        return response

    def _observe(self, request: Observe.Request, response: Observe.Response) -> Observe.Response:
        cameras = list(request.cameras) or list(self.worker.emb.cameras)
        try:
            views = self.worker.observe(cameras, request.depth, request.segmentation)
        except (WorkerError, ValueError) as exc:
            response.success, response.message = False, str(exc)
            return response
        stamp = _stamp(self.worker.station.sim_time)
        response.success = True
        response.views = [camera_view_msg(v, stamp) for v in views]
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
        p, o = request.position, request.orientation
        rotation = None
        if request.use_orientation:
            import mujoco

            m = np.zeros(9)
            mujoco.mju_quat2Mat(m, np.array([o.w, o.x, o.y, o.z]))
            rotation = m.reshape(3, 3)
        seed = np.asarray(request.seed, dtype=float) if len(request.seed) else None
        try:
            result = self.worker.ik(request.arm, np.array([p.x, p.y, p.z]), rotation, seed)
        except WorkerError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = result.ok, result.reason
        response.joints = result.joints.tolist()
        response.position_error = float(result.position_error)
        response.rotation_error = float(result.rotation_error)
        return response

    def _plan(self, request: Plan.Request, response: Plan.Response) -> Plan.Response:
        goal = np.asarray(request.joint_goal, dtype=float) if len(request.joint_goal) else None
        position = rotation = None
        if goal is None:
            t, o = request.tcp_goal.position, request.tcp_goal.orientation
            position = np.array([t.x, t.y, t.z])
            if request.use_orientation:
                import mujoco

                m = np.zeros(9)
                mujoco.mju_quat2Mat(m, np.array([o.w, o.x, o.y, o.z]))
                rotation = m.reshape(3, 3)
        try:
            result = self.worker.plan(request.arm, goal, position, rotation)
        except WorkerError as exc:
            response.success, response.message = False, str(exc)
            return response
        response.success, response.message = result.ok, result.reason
        response.waypoint_count = len(result.path)
        response.waypoints = [float(v) for q in result.path for v in q]
        return response

    def _outcome(self, request: Outcome.Request, response: Outcome.Response) -> Outcome.Response:
        try:
            outcome = self.worker.outcome(request.token)
        except WorkerError as exc:
            response.accepted, response.message = False, str(exc)
            return response
        response.accepted = True
        response.success, response.score, response.detail = (
            outcome.success,
            outcome.score,
            outcome.detail,
        )
        return response

    def _profile(self, _request: Profile.Request, response: Profile.Response) -> Profile.Response:
        p = self.worker.profile()
        response.kind, response.robot, response.command_layout = p.kind, p.robot, p.command_layout
        response.control_hz, response.physics_hz = p.control_hz, p.physics_hz
        response.physics_steps_per_tick, response.backend = p.physics_steps_per_tick, p.backend
        return response


def make_worker_node(context: rclpy.Context | None = None) -> WorkerNode:
    """The worker node on the station described by the installed embodiment config."""
    emb = load_embodiment()
    urdf = station_urdf(config=emb.path)
    return WorkerNode(Worker(emb, urdf), urdf, context=context)


def main(args: list[str] | None = None) -> int:
    rclpy.init(args=args)
    try:
        node = make_worker_node()
    except ValueError as exc:
        print(f'worker: {exc}', file=sys.stderr)
        return 2
    try:
        rclpy.spin(node)
    except KeyboardInterrupt:
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
