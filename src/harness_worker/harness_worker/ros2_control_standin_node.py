"""A stand-in for the ros2_control side of the robot, for tests on machines without
ros2_control: it plays the hardware, the controllers and the camera drivers over the MuJoCo
station. NOT a controller: it is named for what it is.

- It subscribes to the position controller's command topic
  (`station_position_controller/commands`, std_msgs/Float64MultiArray: each arm's six joints and
  its finger joint) and steps the simulated station one control tick per command (lockstep, so
  that the simulation stays deterministic), then publishes what joint_state_broadcaster, a
  simulator's /clock and camera drivers publish: `joint_states` (position, velocity, and the
  fingers' contact force as effort), `/clock`, `cameras/<name>/image_raw`,
  `.../depth/image_raw`, `.../camera_info`, and, as a simulator's segmentation camera would,
  `.../segmentation` with `.../labels` (latched).
- It owns the task's world, so tests read the task's outcome from it:
  `ros2_control_standin/outcome` (no token: a test's view of the simulator).

    ros2_control_standin --ros-args -p task:=lift_cube -p layout:=0 -p seed:=0
"""

from __future__ import annotations

import json
import sys
import threading
import time

import numpy as np
import rclpy
from arx_x5_description.embodiment import ARMS, load_embodiment
from harness_bench.tasks import make_task
from harness_types.convert import camera_view_msg, stamp
from harness_types.process import leave_graph
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.utilities import get_default_context
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Float64MultiArray, String

from arx_x5_description.urdf import station_urdf
from harness_msgs.srv import Outcome
from harness_types import names
from harness_worker.backends.mujoco import MujocoStation

AT_REST_S = 0.05  # no command for this long: the world is at rest, its cameras are published
REPUBLISH_S = 0.25  # and again this often while it stays at rest, as a camera driver streams


class Ros2ControlStandin(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__(names.STANDIN, **kwargs)
        task = self.declare_parameter('task', 'lift_cube').value
        layout = int(self.declare_parameter('layout', 0).value)
        seed = int(self.declare_parameter('seed', 0).value)
        self.camera_every = max(1, int(self.declare_parameter('camera_every_ticks', 5).value))
        self.emb = emb = load_embodiment()
        self.station = MujocoStation(emb, station_urdf(config=emb.path))
        self.task = make_task(task)
        self.station.load(self.task.scene(layout, seed))
        g = emb.gripper
        self.joint_names = emb.all_joint_names()
        self._finger = {a: f'{a}_{g.joint}' for a in ARMS}
        self._lock = threading.Lock()
        self.step = 0
        self._last_command = time.monotonic()
        self._published_at_rest: float | None = None
        self.joint_states = self.create_publisher(JointState, names.JOINT_STATES, 10)
        self.clock = self.create_publisher(Clock, names.CLOCK, 10)
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.cameras = {
            cam: (
                self.create_publisher(Image, names.camera_image(cam), 2),
                self.create_publisher(Image, names.camera_depth(cam), 2),
                self.create_publisher(CameraInfo, names.camera_info(cam), 2),
                self.create_publisher(Image, names.camera_segmentation(cam), 2),
            )
            for cam in emb.cameras
        }
        labels = json.dumps([o.label for o in self.station.objects])
        for cam in emb.cameras:
            self.create_publisher(String, names.camera_labels(cam), latched).publish(
                String(data=labels)
            )
        self.create_subscription(Float64MultiArray, names.CONTROLLER_COMMANDS, self._command, 10)
        self.create_service(Outcome, f'{names.STANDIN}/outcome', self._outcome)
        self.create_timer(AT_REST_S, self._at_rest)
        self._publish(cameras=True)

    def _command(self, msg: Float64MultiArray) -> None:
        values = np.asarray(msg.data, dtype=float)
        if values.shape != (14,) or not np.all(np.isfinite(values)):
            self.get_logger().error(f'ignored a command of {values.shape}: need 14 finite numbers')
            return
        command = values.copy()
        for k in (6, 13):  # finger joint -> the open fraction the station takes
            command[k] = self.emb.gripper.open_fraction(values[k])
        with self._lock:
            self.station.apply(command)
            self.step += 1
            self._last_command = time.monotonic()
            self._published_at_rest = None
            self._publish(cameras=self.step % self.camera_every == 0)

    def _at_rest(self) -> None:
        """The world waits for its next command (lockstep): publish its state and images now,
        then at REPUBLISH_S, so that a subscriber that joined late still sees them."""
        with self._lock:
            now = time.monotonic()
            if now - self._last_command < AT_REST_S:
                return
            if self._published_at_rest is not None and now - self._published_at_rest < REPUBLISH_S:
                return
            self._published_at_rest = now
            self._publish(cameras=True)

    def _publish(self, cameras: bool) -> None:
        now = stamp(self.station.time)
        state = self.station.state(self.step)
        js = JointState(name=self.joint_names)
        js.header.stamp = now
        positions, velocities, efforts = [], [], []
        for a in ARMS:
            arm = state.arm(a)
            positions += [*map(float, arm.joints), *map(float, arm.fingers)]
            velocities += [*map(float, arm.velocities), 0.0, 0.0]
            efforts += [0.0] * 6 + [float(arm.grip_force), float(arm.grip_force)]
        js.position, js.velocity, js.effort = positions, velocities, efforts
        self.clock.publish(Clock(clock=now))
        self.joint_states.publish(js)
        if not cameras:
            return
        for cam, (rgb, depth, info, seg) in self.cameras.items():
            msg = camera_view_msg(self.station.render(cam, depth=True, segmentation=True))
            rgb.publish(msg.rgb)
            depth.publish(msg.depth)
            info.publish(msg.info)
            seg.publish(msg.segmentation)

    def _outcome(self, _request: Outcome.Request, response: Outcome.Response):
        with self._lock:
            outcome = self.task.check(self.station.snapshot(self.step))
        response.accepted, response.success = True, outcome.success
        response.score, response.detail = outcome.score, outcome.detail
        return response


def main(args: list[str] | None = None) -> int:
    rclpy.init(args=args)
    node = Ros2ControlStandin()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):  # Ctrl-C, SIGTERM
        pass
    finally:
        node.station.close()
        leave_graph([node], get_default_context())
    return 0


if __name__ == '__main__':
    sys.exit(main())
