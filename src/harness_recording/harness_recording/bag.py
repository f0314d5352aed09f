"""The episode's rosbag2: serialized messages written to an MCAP bag that `ros2 bag play`
replays. Pure: the recorder node hands over CDR bytes (raw subscriptions); nothing here
imports rclpy."""

from __future__ import annotations

import contextlib
import functools
import importlib
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from harness_types.config import check_yaml
from rosbags.interfaces import (
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from harness_types import names

# What every episode records: the robot's motion, the simulated clock, the driver's own events
# (JSON in std_msgs/String: model requests, cells, verdicts, the end), the images the model was
# sent, each execution's start and end, the shield's rejections and the rviz markers (located
# objects, regions, rejections); with the cameras (episode_topics) their JPEG frames and
# calibration. Raw camera images are left out: at 25 Hz they would make a bag of hundreds of MB.
TOPICS = {
    names.JOINT_STATES: 'sensor_msgs/msg/JointState',
    names.TF: 'tf2_msgs/msg/TFMessage',
    names.TF_STATIC: 'tf2_msgs/msg/TFMessage',
    names.CLOCK: 'rosgraph_msgs/msg/Clock',
    names.ROBOT_DESCRIPTION: 'std_msgs/msg/String',
    names.EVENTS: 'std_msgs/msg/String',
    names.MARKERS: 'visualization_msgs/msg/MarkerArray',
    names.MODEL_IMAGES: 'sensor_msgs/msg/CompressedImage',
    names.EXECUTIONS: 'std_msgs/msg/String',
    names.SHIELD_REJECTIONS: 'harness_msgs/msg/ShieldRejection',
}
# The harness's own message types a bag holds (their definitions go into the bag).
HARNESS_TYPES = ('harness_msgs/msg/ShieldRejection',)


# Left out of a lean recording (driver.recording lean) besides the cameras: /tf (the joint
# states and the robot description give it) and the images the model was sent (the run
# folder's images/ holds them).
LEFT_OUT_WHEN_LEAN = (names.TF, names.MODEL_IMAGES)


def episode_topics(cameras: Iterable[str], lean: bool = False) -> dict[str, str]:
    """TOPICS and each camera's JPEG frames and calibration; `lean`: without the cameras and
    LEFT_OUT_WHEN_LEAN."""
    topics = dict(TOPICS)
    if lean:
        return {name: kind for name, kind in topics.items() if name not in LEFT_OUT_WHEN_LEAN}
    for cam in cameras:
        topics[names.camera_compressed(cam)] = 'sensor_msgs/msg/CompressedImage'
        topics[names.camera_info(cam)] = 'sensor_msgs/msg/CameraInfo'
    return topics


def message_class(msgtype: str):
    """'sensor_msgs/msg/JointState' -> its Python message class (ImportError if the package
    is not installed)."""
    package, kind, name = msgtype.split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


@functools.cache
def typestore():
    """The ROS 2 Kilted types with the harness's own (from harness_msgs' installed .msg); built
    once per process (~0.1 s), shared by the report and the dataset."""
    from ament_index_python.packages import get_package_share_directory

    store = get_typestore(Stores.ROS2_KILTED)
    share = Path(get_package_share_directory('harness_msgs'))
    for name in HARNESS_TYPES:
        text = (share / 'msg' / f'{name.rsplit("/", 1)[1]}.msg').read_text()
        store.register(get_types_from_msg(text, name))
    return store


# Topics whose every message is kept for a late subscriber (an episode has dozens at most).
KEPT = (names.EVENTS, names.MODEL_IMAGES)
# Topics whose publishers are latched (transient local): the bag says so, so that `ros2 bag
# play` republishes them latched and a late subscriber (rviz) still gets them.
LATCHED = (names.ROBOT_DESCRIPTION, names.TF_STATIC, *KEPT)


def _named(topic: str, of: tuple[str, ...]) -> bool:
    """`topic` (fully qualified, in any namespace) is one of `of`."""
    return any(topic == n or topic.endswith('/' + n.lstrip('/')) for n in of)


def is_latched(topic: str) -> bool:
    """`topic` (fully qualified, in any namespace) is one of LATCHED."""
    return _named(topic, LATCHED)


def offered_qos(topic: str) -> Qos:
    """The QoS `topic`'s publishers offer in the live graph, as the bag records it: latched
    ones transient local, keeping every message of KEPT topics and the last of the others."""
    latched, kept = is_latched(topic), _named(topic, KEPT)
    return Qos(
        QosHistory.KEEP_ALL if kept else QosHistory.KEEP_LAST,
        0 if kept else 1 if latched else 100,
        QosReliability.RELIABLE,
        QosDurability.TRANSIENT_LOCAL if latched else QosDurability.VOLATILE,
        QosTime(0x7FFFFFFF, 0xFFFFFFFF),
        QosTime(0x7FFFFFFF, 0xFFFFFFFF),
        QosLiveliness.AUTOMATIC,
        QosTime(0x7FFFFFFF, 0xFFFFFFFF),
        False,
    )


class BagRecorder:
    """Thread-safe: subscriptions of several executor threads write through one lock.
    `topics` maps fully qualified topic names to message types."""

    def __init__(self, path: Path, topics: dict[str, str]) -> None:
        self.path = Path(path)
        self.topics = dict(topics)
        self._lock = threading.Lock()
        self._writer = Writer(self.path, version=9, storage_plugin=StoragePlugin.MCAP)
        self._writer.open()
        store = typestore()
        self._connections = {
            topic: self._writer.add_connection(
                topic,
                msgtype,
                typestore=store,
                offered_qos_profiles=[offered_qos(topic)],
            )
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


class LinkedBagError(ValueError):
    """A run folder's bag, or a file in it, is a symbolic link: a recording is its run's own."""


def reader_of(path: Path) -> Reader:
    """rosbags' Reader of the bag at `path` (not yet open), its metadata.yaml's nesting checked
    first: rosbags' YAML loader recurses, and a crafted metadata.yaml ended the process.
    LinkedBagError when the folder or a file in it is a link (a crafted run folder's `bag`
    pointing at another run's had that run read as its own)."""
    bag = Path(path)
    linked = [bag] if bag.is_symlink() else []
    with contextlib.suppress(OSError):
        linked += [f for f in bag.iterdir() if f.is_symlink()] if not linked else []
    if linked:
        raise LinkedBagError(
            f"{linked[0]} is a symbolic link: a run folder's bag and its files are its own"
        )
    with contextlib.suppress(OSError, UnicodeDecodeError):  # (rosbags then says what is wrong)
        check_yaml((Path(path) / 'metadata.yaml').read_text())
    return Reader(path)


def unclosed(bag: Path) -> bool:
    """`bag` is a recording that did not close: its MCAP file without metadata.yaml."""
    bag = Path(bag)
    return not (bag / 'metadata.yaml').is_file() and bag.is_dir() and any(bag.glob('*.mcap'))


def unclosed_note(bag: Path) -> str:
    """What a run's `bag` folder without its metadata.yaml is: a recording that did not close
    (its process ended first: the MCAP file is there), or no bag at all."""
    if unclosed(bag):
        return (
            f'{bag} has its MCAP file but no metadata.yaml: the recording did not close (its '
            'process ended first)'
        )
    return 'no bag in this run folder'


def shortfall(read: int, held: int) -> str:
    """'' when `read` messages are all the `held` that the bag's metadata counts, else what is
    missing: rosbags and the MCAP reader stop without a word at a damaged record."""
    if read >= held:
        return ''
    return (
        f'the bag is damaged: {read} of its {held} messages could be read (the file ends or is '
        'corrupt after them)'
    )


class CountedMessages:
    """The messages of `connections` (rosbags' Connection objects of `reader`, one bag),
    counted against what the bag's metadata says they hold: after the last, `shortfall()`
    says what a damaged record hid (rosbags and the MCAP reader stop at one without a word).
    No connections: no messages (rosbags' reader would give every message of the bag)."""

    def __init__(self, reader: Reader, connections: list) -> None:
        self._reader = reader
        self._connections = list(connections)
        self.read = 0

    def __iter__(self) -> Iterator[tuple]:
        if not self._connections:
            return
        for message in self._reader.messages(connections=self._connections):
            self.read += 1
            yield message

    def shortfall(self) -> str:
        return shortfall(self.read, sum(c.msgcount for c in self._connections))


class OpenedBag:
    """A run's bag opened once for the readers of one process that finish its run folder (the
    dataset's camera frames, the report's plotted series), at the first one's read: rosbags
    reads the metadata and every topic's QoS at each open (~12 ms)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._reader: Reader | None = None
        self._error: Exception | None = None

    def reader(self) -> Reader:
        """The bag's reader, opened at the first call; what rosbags raised when it could not
        be opened, at every call (each reader says so as it would have)."""
        if self._reader is None and self._error is None:
            try:
                reader = reader_of(self.path)
                reader.open()
                self._reader = reader
            except Exception as exc:  # rosbags raises several kinds for a damaged bag
                self._error = exc
        if self._error is not None:
            raise self._error
        return self._reader

    def __enter__(self) -> OpenedBag:
        return self

    def __exit__(self, *exc) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


def bag_reader(path: Path, opened: OpenedBag | None, stack: contextlib.ExitStack) -> Reader:
    """A reader of the bag at `path`: `opened`'s where it is that bag, else one opened now and
    closed with `stack`."""
    if opened is not None and opened.path == Path(path):
        return opened.reader()
    return stack.enter_context(reader_of(path))
