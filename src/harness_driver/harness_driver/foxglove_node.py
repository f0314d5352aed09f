"""The live view: the episode's topics served over the Foxglove WebSocket protocol
(`foxglove-sdk`), so that the Foxglove app opens a running episode with no ROS installation
(`harness run --foxglove [PORT]`, then "Open connection" to ws://localhost:PORT).

The topics are the bag's (harness_driver.bag.episode_topics: joint states, TF, the
description, the events, markers, executions, rejections, the model's images and the cameras as
JPEG). Each message goes out as it arrived, serialized CDR with its ROS 2 message definition
(`ros2msg` schema), which Foxglove decodes itself: nothing is converted."""

from __future__ import annotations

import time

import foxglove
from rclpy.node import Node

from harness_driver.bag import episode_topics, message_class, typestore
from harness_driver.recorder_node import subscription_qos

DEFAULT_PORT = 8765


class FoxgloveBridge(Node):
    """Subscribes to the episode's topics and logs each message to a Foxglove channel of the
    same name; the server listens on `host`:`port` (localhost by default: tunnel it to watch
    from another machine)."""

    def __init__(
        self, cameras, port: int = DEFAULT_PORT, host: str = '127.0.0.1', **kwargs
    ) -> None:
        super().__init__('foxglove_bridge', **kwargs)
        self.foxglove = foxglove.Context()
        store = typestore()
        topics = episode_topics(cameras)
        self.channels: dict[str, foxglove.Channel] = {}
        for name, msgtype in topics.items():
            topic = self.resolve_topic_name(name)
            definition, _ = store.generate_msgdef(msgtype)
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
            name='harness', host=host, port=port, context=self.foxglove
        )

    @property
    def port(self) -> int:
        return self.server.port

    def _forward(self, topic: str, data: bytes) -> None:
        self.channels[topic].log(bytes(data), log_time=time.time_ns())

    def close(self) -> None:
        self.server.stop()
        self.destroy_node()
