"""The recorder: a node in its own process that writes an episode's topics to a rosbag2 (MCAP),
as `ros2 bag record` would; in its own process so that recording does not compete with the
worker's ticks for the driver process's executor and interpreter.

It stops by itself once the driver's `end` event arrived on /harness/events (after a short
drain); on SIGINT (a Ctrl-C to the episode's process group) it records on until that event
or a second SIGINT; on SIGTERM (also when the process that started it ends) it stops at
once. The bag is closed properly either way.

Messages are taken on one thread that waits on a wait set of the node's subscriptions and
takes a message of each ready one itself (`record`), as rclpy's executors do inside, without
their machinery (a wait set rebuilt from every entity of the node, a task per message): the
worker publishes three messages a tick, and the executor cost ~0.4 ms of CPU each. Nothing
else of the node is served (it offers no services: `start_parameter_services=False`).

A warm station's recorder (`--episodes`) stays: each line of its standard input names the next
episode's bag, which it records from then until that episode's `end` event, as above.

    python -m harness_recording.recorder_node BAG_DIR [--ros-args ...]
    python -m harness_recording.recorder_node --episodes [--ros-args ...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

import rclpy
from arx_x5_description.embodiment import load_embodiment
from harness_types.process import die_with_parent, leave, leave_graph
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile
from rclpy.serialization import deserialize_message
from rclpy.utilities import get_default_context
from std_msgs.msg import String

from harness_recording.bag import KEPT, LATCHED, BagRecorder, episode_topics, message_class
from harness_recording.recording_notes import RECORDER_OUTPUT
from harness_types import names

DRAIN_S = 0.3  # after the end event, the longest wait for messages still on their way
# ... which ends once the recorder found nothing to take for this long (a message on its way
# within the host takes well under a millisecond)
QUIET_S = 0.02
# KEPT topics (the driver's events, the model's images): every message kept for a late
# subscriber, so the recorder, which starts after the episode's first events, still gets them.
EVENTS_QOS = QoSProfile(
    history=HistoryPolicy.KEEP_ALL, durability=DurabilityPolicy.TRANSIENT_LOCAL, depth=1
)


# Who may publish what into the bag: the graph's own nodes. A message from any other
# publisher (another process on the machine that joined the domain) is counted, not recorded.
# With the ros2_control backend the robot's state comes from its drivers, as in any ROS graph.
STATE_PUBLISHERS = (
    names.WORKER,
    names.STANDIN,
    'joint_state_broadcaster',
    'robot_state_publisher',
    'ros_gz_bridge',
    'gz_ros_bridge',
)
PUBLISHERS = {
    names.JOINT_STATES: STATE_PUBLISHERS,
    names.TF: STATE_PUBLISHERS,
    names.TF_STATIC: STATE_PUBLISHERS,
    names.CLOCK: STATE_PUBLISHERS,
    names.ROBOT_DESCRIPTION: STATE_PUBLISHERS,
    names.EVENTS: (names.DRIVER,),
    names.MARKERS: (names.WORKER, names.SKILL_SERVER, names.KERNEL),
    names.MODEL_IMAGES: (names.DRIVER,),
    names.EXECUTIONS: (names.SKILL_SERVER,),
    names.SHIELD_REJECTIONS: (names.WORKER,),
}
# Camera frames and calibration come from whichever node drives the camera (the worker, a
# camera driver, a simulator's bridge): any publisher of the domain. They are evidence of
# what the cameras saw, nothing in the graph acts on the recording.
ANY_PUBLISHER = None


DISCOVERY_TRIES = 25


def _gid(raw) -> bytes:
    """A publisher's gid as bytes, from a message's info or an endpoint's info."""
    if isinstance(raw, dict):
        raw = raw.get('data', b'')
    return bytes(bytearray(raw or b''))[:16]


def subscription_qos(name: str) -> QoSProfile:
    """How a listener of the whole episode (the recorder, the live view) subscribes to `name`:
    every message of KEPT topics, the last of a latched one, a deep queue for the rest."""
    if name in KEPT:
        return EVENTS_QOS
    latched = name in LATCHED
    return QoSProfile(
        depth=names.RECORDED_DEPTH,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
    )


class Recorder(Node):
    """Records into one bag at a time: `bag_path`'s from the start, or (a warm station's
    recorder, `bag_path` None) each episode's from its `begin` to its `end` event."""

    def __init__(self, bag_path: str | None, lean: bool = False) -> None:
        super().__init__(names.RECORDER, start_parameter_services=False)
        topics = episode_topics(load_embodiment().cameras, lean)
        resolved = {self.resolve_topic_name(name): name for name in topics}
        self.topics = {topic: topics[name] for topic, name in resolved.items()}
        self.bag: BagRecorder | None = None
        self.ended = threading.Event()
        self.quiet_since: float | None = None  # since when no subscription had a message
        self._trusted: dict[str, set[bytes]] = {topic: set() for topic in resolved}
        self._lock = threading.Lock()
        # The robot's description (latched once, when the station starts): a warm recorder's
        # next bag starts with it, as a new subscriber's would. (Not the events: a new
        # episode's publisher latches its own; not /tf_static: each reset publishes its own,
        # moved by the scene's variation.)
        self._latched: dict[str, bytes] = {}
        self._bag_lock = threading.Lock()
        self._wake = self.create_guard_condition(lambda: None)  # ends record()'s wait
        self.begin(bag_path)
        for topic, name in resolved.items():
            self.create_subscription(
                message_class(topics[name]),
                topic,
                lambda data, info, topic=topic, name=name: self._write(topic, name, data, info),
                subscription_qos(name),
                raw=True,
            )

    def record(self, stop: threading.Event) -> None:
        """Write every message as it comes until `stop` is set (then `wake()`) or the context
        ends (the recorder's one receiving thread)."""
        subscriptions = list(self.subscriptions)
        context = self.context
        while not stop.is_set() and context.ok():
            # Short waits only while a bag drains after its end event: they notice the quiet
            # that closes it. Otherwise a wait ends at a message or a wake (a recorder that
            # woke every 10 ms held 2% of a core between messages and episodes).
            draining = self.ended.is_set() and self.bag is not None
            try:
                ready = _ready(
                    context,
                    subscriptions,
                    DRAIN_SLICE_S if draining else IDLE_SLICE_S,
                    self._wake.handle,
                )
            except Exception:  # the context is shutting down
                if stop.is_set() or not context.ok():
                    return
                raise
            if not ready:
                if self.quiet_since is None:
                    self.quiet_since = time.monotonic()
                continue
            self.quiet_since = None
            for sub in ready:  # one message of each ready topic a round: none starves another
                with sub.handle:
                    taken = sub.handle.take_message(sub.msg_type, sub.raw)
                if taken is None:
                    continue
                try:
                    sub.callback(*taken)
                except Exception:  # one bad message must not end the recording
                    self.write_errors += 1
                    self.get_logger().error(
                        f'{sub.topic_name}: a message could not be recorded:\n'
                        f'{traceback.format_exc()}'
                    )

    def wake(self) -> None:
        """End record()'s wait now (it looks at its `stop` again)."""
        self._wake.trigger()

    def begin(self, bag_path: str | None, published_from_now: bool = False) -> None:
        """Record into a new bag at `bag_path` (None: into none until asked) until the `end`
        event; what the last bag's report counted starts again from zero. `published_from_now`
        (a warm station's next bag, opened before its episode's first event): the events and
        model images published before now are an earlier episode's, left out."""
        with self._bag_lock:
            self.since_ns = time.time_ns() if published_from_now else None
            self.earlier = 0  # messages of an earlier episode left out
            self.ended.clear()
            self.refused: dict[str, int] = {}
            self.malformed_events = 0
            self.write_errors = 0  # messages that could not be written (the report counts them)
            self.bag = None if bag_path is None else BagRecorder(bag_path, self.topics)
            if self.bag is not None:
                for topic, data in self._latched.items():
                    self.bag.write(topic, data, time.time_ns())

    def close_bag(self) -> dict:
        """Close the bag; its report (what `recorded` prints)."""
        with self._bag_lock:
            bag, self.bag = self.bag, None
            if bag is not None:
                bag.close()
            return {
                'counts': bag.counts if bag is not None else {},
                'refused': self.refused,
                'malformed_events': self.malformed_events,
                'write_errors': self.write_errors,
                'earlier_episodes_messages': self.earlier,
                'ended': self.ended.is_set(),
            }

    def _from_the_graph(self, topic: str, name: str, info) -> bool:
        allowed = PUBLISHERS.get(name, ANY_PUBLISHER)
        if allowed is ANY_PUBLISHER:
            return True
        gid = _gid((info or {}).get('publisher_gid'))
        with self._lock:
            if gid in self._trusted[topic]:
                return True
            # A publisher's first message can arrive before the graph lists its endpoint:
            # look again for a moment before refusing it.
            for _ in range(DISCOVERY_TRIES):
                self._trusted[topic] = {
                    _gid(e.endpoint_gid)
                    for e in self.get_publishers_info_by_topic(topic)
                    if e.node_name in allowed
                }
                if gid in self._trusted[topic]:
                    return True
                time.sleep(0.02)
            self.refused[topic] = self.refused.get(topic, 0) + 1
            return False

    def _write(self, topic: str, name: str, data: bytes, info) -> None:
        if not self._from_the_graph(topic, name, info):
            return
        if name == names.ROBOT_DESCRIPTION:
            self._latched[topic] = data
        with self._bag_lock:
            if self.bag is None:  # between a warm recorder's episodes
                return
            published = (info or {}).get('source_timestamp') or 0  # 0: the middleware says none
            if self.since_ns is not None and name in KEPT and 0 < published < self.since_ns:
                self.earlier += 1  # kept history a late match delivered: not this episode's
                return
            self.bag.write(topic, data, time.time_ns())
            if name == names.EVENTS:
                self._event(data)

    def _event(self, data: bytes) -> None:
        """The driver's `end` event closes the recording; anything unreadable is counted."""
        try:
            msg = deserialize_message(data, String)
            if json.loads(msg.data).get('type') == 'end':
                self.ended.set()
        except Exception:
            self.malformed_events += 1


DRAIN_SLICE_S = 0.01  # while a bag drains, a wait for messages is cut into slices this long
IDLE_SLICE_S = 1.0  # otherwise (the context's end is noticed within this)


def _quiet(node: Recorder) -> bool:
    """Whether the recorder's thread has found no message to take for QUIET_S."""
    since = node.quiet_since
    return since is not None and time.monotonic() - since >= QUIET_S


def _ready(context, subscriptions: list, seconds: float, wake) -> list:
    """The subscriptions that have messages to take, waiting at most `seconds` for one or for
    the guard condition `wake` (a handle) to be triggered."""
    with contextlib.ExitStack() as held:
        held.enter_context(context.handle)
        held.enter_context(wake)
        for sub in subscriptions:
            held.enter_context(sub.handle)
        wait_set = _rclpy.WaitSet(len(subscriptions), 1, 0, 0, 0, 0, context.handle)
        wait_set.clear_entities()
        for sub in subscriptions:
            wait_set.add_subscription(sub.handle)
        wait_set.add_guard_condition(wake)
        wait_set.wait(int(seconds * 1e9))
        ready = set(wait_set.get_ready_entities('subscription'))
    return [sub for sub in subscriptions if sub.handle.pointer in ready]


def _drain(node: Recorder) -> None:
    """After the end event: the last ticks' messages may still be on their way."""
    drained = time.monotonic() + DRAIN_S
    while time.monotonic() < drained and not _quiet(node):
        time.sleep(0.002)  # the quiet is noticed within 2 ms (a bag's close waits on it)


def _serve_episodes(node: Recorder, terminated: threading.Event) -> None:
    """A warm station's recorder: each line of standard input names an episode's bag; this
    process's output goes to the `recorder.out` beside it for that episode (the recording and
    recorded lines, as a recorder of one episode writes them). Ends at the input's end or at
    SIGTERM."""
    requests: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            if line.strip():
                requests.put(line.strip())
        requests.put(None)

    threading.Thread(target=read, name='requests', daemon=True).start()
    station_output = os.dup(1)
    while not terminated.is_set():
        try:
            bag = requests.get(timeout=0.1)
        except queue.Empty:
            continue
        if bag is None:
            return
        out = os.open(Path(bag).with_name(RECORDER_OUTPUT), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        try:
            node.begin(bag, published_from_now=True)
            print('recording', ', '.join(node.topics), flush=True)
        except Exception as exc:  # the station sees no `recording` line and says why
            print(f'the bag could not be opened: {type(exc).__name__}: {exc}', flush=True)
            continue
        finally:
            sys.stdout.flush()
        # the end event is noticed as it comes (the next episode waits on this bag's close)
        while not terminated.is_set() and not node.ended.wait(0.1):
            pass
        if node.ended.is_set():
            _drain(node)
        print('recorded', json.dumps(node.close_bag()), flush=True)
        sys.stderr.flush()
        os.dup2(station_output, 1)
        os.dup2(station_output, 2)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ros_args = argv[argv.index('--ros-args') :] if '--ros-args' in argv else []
    own = argv[: argv.index('--ros-args')] if ros_args else argv
    parser = argparse.ArgumentParser(prog='recorder', description=__doc__.splitlines()[0])
    parser.add_argument(
        'bag', nargs='?', help="the bag folder to create (none: a warm station's recorder)"
    )
    parser.add_argument(
        '--episodes',
        action='store_true',
        help="a warm station's recorder: each line of standard input names the next "
        "episode's bag folder",
    )
    parser.add_argument(
        '--lean',
        action='store_true',
        help='a lean recording (driver.recording lean): no camera frames, /tf or model images '
        '(harness_recording.bag.LEFT_OUT_WHEN_LEAN)',
    )
    args = parser.parse_args(own)
    if (args.bag is None) != args.episodes:
        parser.error('give either a bag folder or --episodes')
    rclpy.init(args=['recorder', *ros_args])
    node = Recorder(args.bag, lean=args.lean)
    signals: list[float] = []  # when each SIGINT came
    terminated = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: signals.append(time.monotonic()))
    signal.signal(signal.SIGTERM, lambda *_: terminated.set())
    die_with_parent()  # its SIGTERM closes the bag with what it has
    stop = threading.Event()
    spinner = threading.Thread(target=node.record, args=(stop,), daemon=True)
    spinner.start()
    if args.episodes:
        _serve_episodes(node, terminated)
    else:
        print('recording', ', '.join(node.topics), flush=True)
        # A Ctrl-C (SIGINT) reaches the whole process group: the driver then judges the
        # episode's goal and writes its `end` event, which the bag should hold. Record on
        # until it comes, with no time limit of its own: that judgement took over 5 s on two
        # busy cores, and can take 30 s with a VLM verifier. The graph that started the
        # recorder stops it (SIGTERM) when the episode ends without that event, and the
        # recorder dies with that process; a second Ctrl-C closes the bag at once, as does
        # the SIGTERM that `ros2 launch` sends after its own SIGINT.
        said = False
        while not node.ended.wait(0.02) and not terminated.is_set() and len(signals) < 2:
            if signals and not said:
                print(
                    "interrupted: recording until the episode's end event "
                    '(interrupt again to close the bag now)',
                    flush=True,
                )
                said = True
        if node.ended.is_set():
            _drain(node)
    stop.set()  # nothing taken before this is lost: the bag closes after the thread ends
    node.wake()
    spinner.join(timeout=5)
    if not args.episodes:
        print('recorded', json.dumps(node.close_bag()), flush=True)
    # The context's destruction says goodbye to the other participants: the process ends
    # without the interpreter's teardown, which would otherwise do it.
    leave_graph([node], get_default_context())
    return 0


if __name__ == '__main__':
    leave(main())  # the bag closed, the node and the context gone: no teardown
