"""The `ros2_control` worker backend: the robot behind a stock ros2_control controller (the real
arm, Gazebo's gz_ros2_control, mock hardware, or the MuJoCo stand-in in tests).

- Commands: each shield-accepted tick's command goes to a position
  `forward_command_controller/ForwardCommandController` (config/controllers.yaml of
  arx_x5_description) as std_msgs/Float64MultiArray: each arm's six joints, then its finger
  joint. Chosen over a JointTrajectoryController: the harness already interpolates and
  shields every tick; a trajectory controller would interpolate again between ticks, and the
  arm could then be where no shielded command put it.
- Grippers: the open fraction maps to the finger joint as in the simulator (the embodiment's
  gripper mapping) within the joint's range: there a closed gripper's squeeze is the
  hardware's own force control, not a target below the joint limit.
- Measured state: `joint_states` (joint_state_broadcaster) through the kinematics (TCP and link6
  poses); the grip force is the finger joint's effort where the hardware reports one.
- Time: a tick waits until the node's clock (wall clock on hardware; /clock with
  use_sim_time in simulation) has advanced one control period past the command and a joint
  state stamped after that has arrived.
- Cameras: `cameras/<name>/image_raw` (rgb8), `.../depth/image_raw` (32FC1) and
  `.../camera_info`; a simulator may add `.../segmentation` (32SC1) with `.../labels` (a JSON
  list, latched). Remap them to your camera driver's topics. A view is the first frame stamped
  at or after the latest joint state (cameras and arm share one clock), never an older one. The
  camera poses follow from the embodiment's mountings and the measured joints.
- Reset builds no task (the world is real): it brings the arms home if they are not; the
  outcome says there is no simulator to judge it.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import Future

import numpy as np
from arx_x5_description.embodiment import ARMS, Embodiment
from harness_bench.randomization import NO_VARIATION, SceneVariation
from harness_bench.task import ObjectSpec, WorldSnapshot
from harness_shield.shield import Contacts
from harness_types.camera import CameraView
from harness_types.convert import array_of
from harness_types.robot_state import ArmState, RobotState, arm_slice
from harness_types.transforms import matrix_to_quat, rpy_to_matrix

from harness_types import names
from harness_worker.kinematics import StationKinematics
from harness_worker.station import RobotNotAnswering

STATE_TIMEOUT_S = 5.0  # how long a tick waits for the robot's joint state
FIRST_STATE_TIMEOUT_S = 60.0  # at reset: the robot's drivers may still be starting
OPTICAL = rpy_to_matrix(-np.pi / 2, 0.0, -np.pi / 2)  # camera body frame -> optical frame


def _seconds(msg) -> float:
    return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9


def _fresh(msg, after: float) -> bool:
    """An image stamped at or after `after` (s, the robot's clock)."""
    return msg is not None and _seconds(msg) >= after - 1e-6


def command_joints(emb: Embodiment) -> list[str]:
    """The position controller's joints, in the order of its command: each arm's six joints,
    then its finger joint (config/controllers.yaml must list the same)."""
    return [name for a in ARMS for name in (*emb.arm_joint_names(a), f'{a}_{emb.gripper.joint}')]


def make_station(emb: Embodiment, urdf: str, node=None) -> Ros2ControlStation:
    if node is None:
        raise ValueError('the ros2_control backend needs the worker node (it talks to ROS)')
    return Ros2ControlStation(emb, urdf, node)


class Ros2ControlStation:
    backend = 'ros2_control'
    simulated = False

    def __init__(self, emb: Embodiment, urdf: str, node) -> None:
        from rclpy.callback_groups import ReentrantCallbackGroup
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from sensor_msgs.msg import CameraInfo, Image, JointState
        from std_msgs.msg import Float64MultiArray, String

        self.emb = emb
        self.node = node
        self.kinematics = StationKinematics(urdf, emb)
        self.period = 1.0 / emb.rates.control_hz
        self._float_array = Float64MultiArray
        self.command_joints = command_joints(emb)
        self._lock = threading.Condition()
        self._joints: dict[str, tuple[float, float, float]] = {}
        self._stamp = -1.0
        self._reset_time = 0.0
        self._images: dict[tuple[str, str], object] = {}
        self._labels: dict[str, tuple[str, ...]] = {}
        group = ReentrantCallbackGroup()  # the worker waits on these inside its services
        self._publisher = node.create_publisher(Float64MultiArray, names.CONTROLLER_COMMANDS, 10)
        node.create_subscription(
            JointState, names.JOINT_STATES, self._joint_state, 50, callback_group=group
        )
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        for cam in emb.cameras:
            for kind, topic, msg in (
                ('rgb', names.camera_image(cam), Image),
                ('depth', names.camera_depth(cam), Image),
                ('info', names.camera_info(cam), CameraInfo),
                ('segmentation', names.camera_segmentation(cam), Image),
            ):
                node.create_subscription(
                    msg,
                    topic,
                    lambda m, key=(cam, kind): self._image(key, m),
                    2,
                    callback_group=group,
                )
            node.create_subscription(
                String,
                names.camera_labels(cam),
                lambda m, cam=cam: self._labels.__setitem__(cam, tuple(json.loads(m.data))),
                latched,
                callback_group=group,
            )
        # Collision geometry for the shield and the planner: the station without objects (the
        # real objects are not modelled; the table and the arms are).
        from harness_worker.backends.mujoco import MujocoStation

        self._geometry = MujocoStation(emb, urdf)
        self._geometry.load([])

    # Subscriptions ----------------------------------------------------------------------------

    def _joint_state(self, msg) -> None:
        stamp = _seconds(msg)
        with self._lock:
            for k, name in enumerate(msg.name):
                position = msg.position[k] if k < len(msg.position) else 0.0
                velocity = msg.velocity[k] if k < len(msg.velocity) else 0.0
                effort = msg.effort[k] if k < len(msg.effort) else 0.0
                self._joints[name] = (position, velocity, effort)
            self._stamp = stamp
            self._lock.notify_all()

    def _image(self, key: tuple[str, str], msg) -> None:
        with self._lock:
            self._images[key] = msg

    def _now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

    def _wait_state(self, after: float, timeout: float = STATE_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._stamp < after - 1e-6 or len(self._joints) < len(self.command_joints):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RobotNotAnswering(
                        f'no joint state on {names.JOINT_STATES} stamped after {after:.3f} s '
                        f'within {timeout:g} s (is joint_state_broadcaster running?)'
                    )
                self._lock.wait(min(left, 0.05))

    # The Station protocol ---------------------------------------------------------------------

    def load(self, objects: list[ObjectSpec], variation: SceneVariation = NO_VARIATION) -> None:
        """The world is real: no objects to build, no scene to vary (the worker refuses a
        variation here). Waits for the robot's state."""
        self._wait_state(-1.0, FIRST_STATE_TIMEOUT_S)
        self._reset_time = self._stamp

    def apply(self, command: np.ndarray) -> None:
        g = self.emb.gripper
        values = []
        for k, _arm in enumerate(ARMS):
            values += [float(v) for v in command[7 * k : 7 * k + 6]]
            values.append(min(g.upper, max(g.lower, g.target(float(command[7 * k + 6])))))
        sent = max(self._now(), self._stamp)
        self._publisher.publish(self._float_array(data=values))
        target = sent + self.period
        deadline = time.monotonic() + STATE_TIMEOUT_S
        while self._now() < target - 1e-6:  # wall clock on hardware, /clock in simulation
            if time.monotonic() > deadline:
                raise RobotNotAnswering(
                    f'the clock did not reach {target:.3f} s within {STATE_TIMEOUT_S:g} s '
                    f'(with use_sim_time: is the simulator publishing {names.CLOCK}?)'
                )
            time.sleep(0.001)
        self._wait_state(target)

    def measured(self) -> np.ndarray:
        g = self.emb.gripper
        with self._lock:
            q = [self._joints.get(name, (0.0, 0.0, 0.0))[0] for name in self.command_joints]
        out = np.array(q, dtype=float)
        for k in (6, 13):
            out[k] = g.open_fraction(out[k])
        return out

    @property
    def time(self) -> float:
        return max(0.0, self._stamp - self._reset_time)

    def state(self, step: int) -> RobotState:
        g = self.emb.gripper
        with self._lock:
            joints = dict(self._joints)
        arms = {}
        for a in ARMS:
            names_ = self.emb.arm_joint_names(a)
            q = np.array([joints.get(n, (0.0, 0.0, 0.0))[0] for n in names_])
            v = np.array([joints.get(n, (0.0, 0.0, 0.0))[1] for n in names_])
            finger = joints.get(f'{a}_{g.joint}', (0.0, 0.0, 0.0))
            mimic = joints.get(f'{a}_{g.mimic_joint}', finger)
            link6, tcp = self.kinematics.arms[a].fk_both(q)
            arms[a] = ArmState(
                name=a,
                joints=q,
                gripper=g.open_fraction(finger[0]),
                tcp_position=tcp.position,
                tcp_quat=matrix_to_quat(tcp.rotation),
                link6_position=link6.position,
                link6_quat=matrix_to_quat(link6.rotation),
                velocities=v,
                grip_force=abs(float(finger[2])),
                fingers=(float(finger[0]), float(mimic[0])),
            )
        return RobotState(arms['left'], arms['right'], step, self.time)

    def render(self, camera: str, depth: bool = True, segmentation: bool = True) -> CameraView:
        if camera not in self.emb.cameras:
            raise ValueError(f'unknown camera {camera!r}; cameras: {", ".join(self.emb.cameras)}')
        deadline = time.monotonic() + STATE_TIMEOUT_S
        with self._lock:
            now = self._stamp  # a view of the world as the last joint state saw it, or later
        while True:
            with self._lock:
                rgb = self._images.get((camera, 'rgb'))
                info = self._images.get((camera, 'info'))
                depth_msg = self._images.get((camera, 'depth'))
                seg_msg = self._images.get((camera, 'segmentation'))
            if (
                _fresh(rgb, now)
                and info is not None
                and (not depth or _fresh(depth_msg, now))
                and (seg_msg is None or not segmentation or _fresh(seg_msg, now))
            ):
                break
            if time.monotonic() > deadline:
                raise RobotNotAnswering(
                    f'no image from {camera} on {names.camera_image(camera)} (and its '
                    f'camera_info{", depth" if depth else ""}) stamped at or after the joint '
                    f'state of {now:.3f} s within {STATE_TIMEOUT_S:g} s'
                )
            time.sleep(0.005)
        position, rotation = self._camera_pose(camera)
        k = info.k
        return CameraView(
            camera,
            array_of(rgb),
            float(k[0]),
            float(k[4]),
            float(k[2]),
            float(k[5]),
            position,
            rotation,
            array_of(depth_msg) if depth and depth_msg is not None else None,
            array_of(seg_msg) if segmentation and seg_msg is not None else None,
            self._labels.get(camera, ()),
            _seconds(rgb) - self._reset_time,
        )

    def render_later(self, cameras: list[str]) -> Future[list[CameraView]]:
        views: Future[list[CameraView]] = Future()
        views.set_result([self.render(c, depth=False, segmentation=False) for c in cameras])
        return views

    def _camera_pose(self, camera: str) -> tuple[np.ndarray, np.ndarray]:
        """The optical frame's pose in the world: the mounting on its parent, the parent's pose
        from the measured joints."""
        cam = self.emb.cameras[camera]
        mount = rpy_to_matrix(*cam.rpy)
        if cam.parent == 'world':
            parent_p, parent_r = np.zeros(3), np.eye(3)
        else:
            arm = cam.parent.split('_')[0]
            link6, _tcp = self.kinematics.arms[arm].fk_both(self.measured()[arm_slice(arm)])
            parent_p, parent_r = link6.position, link6.rotation
        return parent_p + parent_r @ np.array(cam.xyz), parent_r @ mount @ OPTICAL

    def snapshot(self, step: int) -> WorldSnapshot:
        raise RuntimeError('the ros2_control backend has no simulator to judge the task')

    def contacts(self, command: np.ndarray) -> Contacts:
        return self._geometry.contacts(command)

    def arm_collides(self, arm: str, joints: np.ndarray) -> bool:
        geometry = self._geometry
        measured = self.measured()
        for k, a in enumerate(ARMS):
            geometry.data.qpos[geometry._arm_qpos[a]] = measured[7 * k : 7 * k + 6]
        return geometry.arm_collides(arm, joints)

    def close(self) -> None:
        self._geometry.close()
