"""The episode's rosbag2: serialized messages written to an MCAP bag that `ros2 bag play`
replays. Pure: the recorder node hands over CDR bytes (raw subscriptions); nothing here
imports rclpy."""

from __future__ import annotations

import threading
from pathlib import Path

from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from harness_types import names

# What every episode records: the robot's motion, the simulated clock and the driver's own
# events (JSON in std_msgs/String: model requests, cells, verdicts, the end). Camera images are
# left out: at 25 Hz they would make a bag of hundreds of MB.
TOPICS = {
    names.JOINT_STATES: 'sensor_msgs/msg/JointState',
    names.TF: 'tf2_msgs/msg/TFMessage',
    names.CLOCK: 'rosgraph_msgs/msg/Clock',
    names.ROBOT_DESCRIPTION: 'std_msgs/msg/String',
    names.EVENTS: 'std_msgs/msg/String',
}


class BagRecorder:
    """Thread-safe: subscriptions of several executor threads write through one lock.
    `topics` maps fully qualified topic names to message types."""

    def __init__(self, path: Path, topics: dict[str, str]) -> None:
        self.path = Path(path)
        self.topics = dict(topics)
        self._lock = threading.Lock()
        self._writer = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        self._writer.open()
        store = get_typestore(Stores.ROS2_KILTED)
        self._connections = {
            topic: self._writer.add_connection(topic, msgtype, typestore=store)
            for topic, msgtype in self.topics.items()
        }
        self.counts = dict.fromkeys(self.topics, 0)
        self._closed = False

    def write(self, topic: str, data: bytes, stamp_ns: int) -> None:
        with self._lock:
            if self._closed:
                return
            self._writer.write(self._connections[topic], stamp_ns, data)
            self.counts[topic] += 1

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._writer.close()
