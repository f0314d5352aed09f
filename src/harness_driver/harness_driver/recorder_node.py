"""The recorder: a node in its own process that writes an episode's topics to a rosbag2 (MCAP),
as `ros2 bag record` would; in its own process so that recording does not compete with the
worker's ticks for the driver process's executor and interpreter.

It stops by itself once the driver's `end` event arrived on /harness/events (after a short
drain), or on SIGTERM/SIGINT; the bag is closed properly either way.

    python -m harness_driver.recorder_node BAG_DIR [--ros-args ...]
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time

import rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from harness_driver.bag import TOPICS, BagRecorder
from harness_types import names

MESSAGE_TYPES = {
    'sensor_msgs/msg/JointState': JointState,
    'tf2_msgs/msg/TFMessage': TFMessage,
    'rosgraph_msgs/msg/Clock': Clock,
    'std_msgs/msg/String': String,
}
LATCHED = (names.ROBOT_DESCRIPTION,)
DRAIN_S = 0.3


class Recorder(Node):
    def __init__(self, bag_path: str) -> None:
        super().__init__(names.RECORDER)
        resolved = {self.resolve_topic_name(name): name for name in TOPICS}
        self.bag = BagRecorder(bag_path, {topic: TOPICS[name] for topic, name in resolved.items()})
        self.ended = threading.Event()
        for topic, name in resolved.items():
            durability = (
                DurabilityPolicy.TRANSIENT_LOCAL if name in LATCHED else DurabilityPolicy.VOLATILE
            )
            self.create_subscription(
                MESSAGE_TYPES[TOPICS[name]],
                topic,
                lambda data, topic=topic: self._write(topic, data),
                QoSProfile(depth=500, durability=durability),
                raw=True,
            )
        self.create_subscription(String, names.EVENTS, self._event, QoSProfile(depth=500))

    def _write(self, topic: str, data: bytes) -> None:
        self.bag.write(topic, data, time.time_ns())

    def _event(self, msg: String) -> None:
        if json.loads(msg.data).get('type') == 'end':
            self.ended.set()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ros_args = argv[argv.index('--ros-args') :] if '--ros-args' in argv else []
    own = argv[: argv.index('--ros-args')] if ros_args else argv
    parser = argparse.ArgumentParser(prog='recorder', description=__doc__.splitlines()[0])
    parser.add_argument('bag', help='the bag folder to create')
    args = parser.parse_args(own)
    rclpy.init(args=['recorder', *ros_args])
    node = Recorder(args.bag)
    bag = node.bag
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    spinner = threading.Thread(target=rclpy.spin, args=(node,), daemon=True)
    spinner.start()
    print('recording', ', '.join(bag.topics), flush=True)
    while not stop.is_set() and not node.ended.is_set():
        time.sleep(0.05)
    if node.ended.is_set():
        time.sleep(DRAIN_S)
    bag.close()
    print('recorded', json.dumps(bag.counts), flush=True)
    node.destroy_node()
    rclpy.try_shutdown()
    spinner.join(timeout=5)
    return 0


if __name__ == '__main__':
    sys.exit(main())
