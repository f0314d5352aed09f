"""`harness replay RUN`: a run's bag published into the live ROS graph (ROS_DOMAIN_ID), at the
recording's pace (or `rate` times it), so that rviz, rqt or Foxglove inspect a past episode
without a ROS installation's `ros2 bag play` (which plays the same bag where installed).

Each topic is published with the QoS it was recorded with: latched topics (the description,
/tf_static, the events, the model's images) transient-local, keeping all their messages for a
late subscriber. /clock is the bag's own (the episode's simulated time, which the messages'
stamps use); a bag without one gets a /clock from the recording times."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import rclpy
from harness_types.convert import stamp
from harness_types.process import leave_graph
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import get_default_context
from rosgraph_msgs.msg import Clock

from harness_recording.bag import message_class, shortfall
from harness_recording.replay import (
    DamagedBagError,
    RecordedTopic,
    ReplayError,
    bag_of,
    due,
    messages,
    topics,
)
from harness_types import names

PROGRESS_EVERY_S = 5.0
# The most messages a latched topic keeps for late subscribers (a /tf_static holds one or two).
MAX_LATCHED_DEPTH = 1000


class Replayer(Node):
    def __init__(self, recorded: list[RecordedTopic], say: Callable[[str], None]) -> None:
        super().__init__('replay')
        self.publishers_by_topic = {}
        for t in recorded:
            try:
                kind = message_class(t.msgtype)
            except (ImportError, AttributeError, ValueError):
                say(f'skipping {t.name}: its type {t.msgtype} is not installed here')
                continue
            qos = QoSProfile(
                # (a count from the bag's own metadata: one past the middleware's bound failed)
                depth=min(max(1, t.count), MAX_LATCHED_DEPTH) if t.latched else 100,
                reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.TRANSIENT_LOCAL
                if t.latched
                else DurabilityPolicy.VOLATILE,
            )
            self.publishers_by_topic[t.name] = self.create_publisher(kind, t.name, qos)
        has_clock = names.CLOCK in self.publishers_by_topic
        self.clock = None if has_clock else self.create_publisher(Clock, names.CLOCK, 10)

    def publish(self, topic: str, raw: bytes, stamp_ns: int) -> bool:
        publisher = self.publishers_by_topic.get(topic)
        if publisher is None:
            return False
        if self.clock is not None:
            self.clock.publish(Clock(clock=stamp(stamp_ns / 1e9)))
        publisher.publish(raw)
        return True


def replay(
    run: Path,
    rate: float = 1.0,
    loop: bool = False,
    delay: float = 0.0,
    say: Callable[[str], None] = print,
) -> int:
    """Publish the bag (ReplayError if unreadable); 0 at its end, 130 when interrupted, 1
    when a damaged bag ends before all its messages (said; `loop` stops there)."""
    bag = bag_of(run)
    recorded = topics(bag)
    total = sum(t.count for t in recorded)
    if not total:
        raise ReplayError(f'{bag} holds no messages: nothing to replay')
    # No rclpy signal handlers: its SIGINT handler shut the context down, and the next publish
    # raised (a traceback and exit 1) instead of Ctrl-C's KeyboardInterrupt (exit 130).
    rclpy.init(args=['replay'], signal_handler_options=SignalHandlerOptions.NO)
    node = Replayer(recorded, say)
    say(
        f'replaying {bag}: {total} messages on {len(recorded)} topics at {rate:g}x'
        + (' (looping)' if loop else '')
        + '; Ctrl-C to stop'
    )
    try:
        time.sleep(max(0.0, delay))  # let subscribers match first
        while True:
            published, read, started, first = 0, 0, time.monotonic(), None
            last_said = started
            damage = ''
            try:
                for stamp_ns, topic, raw in messages(bag):
                    read += 1
                    first = stamp_ns if first is None else first
                    wait = started + due(stamp_ns, first, rate) - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                    published += node.publish(topic, raw, stamp_ns)
                    if time.monotonic() - last_said > PROGRESS_EVERY_S:
                        last_said = time.monotonic()
                        say(f'{published}/{total} messages, {(stamp_ns - first) / 1e9:.1f} s in')
            except DamagedBagError as exc:
                damage = str(exc)
            say(f'published {published} messages')
            if damage:
                say(damage)
            damaged = shortfall(read, total) or damage
            if damaged:
                say(damaged)
                return 1
            if not loop:
                return 0
    except KeyboardInterrupt:
        return 130
    finally:
        leave_graph([node], get_default_context())
