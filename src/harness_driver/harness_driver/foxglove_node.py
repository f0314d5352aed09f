"""The live view: the episode's topics served over the Foxglove WebSocket protocol
(`foxglove-sdk`), so that the Foxglove app opens a running episode with no ROS installation
(`harness run --foxglove [PORT]`, then "Open connection" to ws://localhost:PORT).

The topics are the bag's (harness_recording.bag.episode_topics: joint states, TF, the
description, the events, markers, executions, rejections, the model's images and the cameras as
JPEG). Each message goes out as it arrived, serialized CDR with its ROS 2 message definition
(`ros2msg` schema, written as ROS 2 writes it: `builtin_interfaces/Time stamp`, which
Foxglove's `mcap_ros2` decoder reads), which Foxglove decodes itself: nothing is converted.
The latched topics (/tf_static, the robot description) are kept and sent again to each client
that subscribes to them later, as a transient-local subscriber gets them on ROS: a 3D panel
opened after the first tick still shows the robot."""

from __future__ import annotations

import threading
import time

import foxglove
from harness_recording.bag import KEPT, episode_topics, is_latched, message_class, typestore
from harness_recording.recorder_node import subscription_qos
from rclpy.node import Node

DEFAULT_PORT = 8765
LATCHED_KEPT = 64  # messages kept per latched topic (each /tf_static publisher sends its own)


class _Resend(foxglove.ServerListener):
    """Sends a latched topic's kept messages when a client subscribes to it."""

    def __init__(self, bridge: FoxgloveBridge) -> None:
        self.bridge = bridge

    def on_subscribe(self, client, channel) -> None:
        self.bridge.resend(channel.topic)


class FoxgloveBridge(Node):
    """Subscribes to the episode's topics and logs each message to a Foxglove channel of the
    same name; the server listens on `host`:`port` (localhost by default: tunnel it to watch
    from another machine)."""

    def __init__(
        self, cameras, port: int = DEFAULT_PORT, host: str = '127.0.0.1', **kwargs
    ) -> None:
        super().__init__('foxglove_bridge', **kwargs)
        self.foxglove = foxglove.Context()
        self._latched: dict[str, list[bytes]] = {}
        self._lock = threading.Lock()
        store = typestore()
        topics = episode_topics(cameras)
        self.channels: dict[str, foxglove.Channel] = {}
        for name, msgtype in topics.items():
            topic = self.resolve_topic_name(name)
            definition, _ = store.generate_msgdef(msgtype, ros_version=2)
            if is_latched(topic) and name not in KEPT:  # events and images: each one once
                self._latched[topic] = []
            self.channels[topic] = foxglove.Channel(
                topic,
                message_encoding='cdr',
                schema=foxglove.Schema(name=msgtype, encoding='ros2msg', data=definition.encode()),
                context=self.foxglove,
            )
            self.create_subscription(
                message_class(msgtype),
                topic,
                lambda data, topic=topic: self._forward(topic, data),
                subscription_qos(name),
                raw=True,
            )
        self.server = foxglove.start_server(
            name='harness',
            host=host,
            port=port,
            context=self.foxglove,
            server_listener=_Resend(self),
        )

    @property
    def port(self) -> int:
        return self.server.port

    def _forward(self, topic: str, data: bytes) -> None:
        data = bytes(data)
        kept = self._latched.get(topic)
        if kept is not None:
            with self._lock:
                kept.append(data)
                del kept[:-LATCHED_KEPT]
        self.channels[topic].log(data, log_time=time.time_ns())

    def resend(self, topic: str) -> None:
        """A latched topic's kept messages once more, for a client that just subscribed (the
        channel's other subscribers get them again too: for /tf_static and the description,
        a repeat changes nothing)."""
        with self._lock:
            kept = list(self._latched.get(topic, ()))
        for data in kept:
            self.channels[topic].log(data, log_time=time.time_ns())

    def close(self) -> None:
        self.server.stop()
        self.destroy_node()
