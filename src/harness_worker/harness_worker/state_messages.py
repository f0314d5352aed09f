"""The worker's state topics (/clock, /joint_states, /tf) as the bytes rclpy publishes. Each is
a MessageTemplate of this station (its joint names and frames never change), so a tick writes
numbers into bytes instead of building and serializing messages (/tf's 16 transforms cost
~0.6 ms a tick that way). No rclpy here.

The templates are serialized by rosbags' CDR serializer, not rclpy's: rclpy's
`serialize_message` returns the middleware's size estimate (a JointState 8 bytes longer than
the message, which a bag reader refuses), and leaves the alignment padding as it finds it;
rosbags writes the exact length with zeroed padding, as a bag holds it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from harness_types.convert import stamp_parts
from harness_types.message_template import MessageTemplate
from harness_types.tf_tree import TfTree
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

# A transform's numbers, in the order its slots take them.
TRANSFORM_SLOTS = ['i4', 'u4'] + ['f8'] * 7  # sec, nanosec, x, y, z, qw, qx, qy, qz


# The message types of the three topics, each after the types it holds.
TYPES = (
    'builtin_interfaces/msg/Time',
    'std_msgs/msg/Header',
    'rosgraph_msgs/msg/Clock',
    'sensor_msgs/msg/JointState',
    'geometry_msgs/msg/Vector3',
    'geometry_msgs/msg/Quaternion',
    'geometry_msgs/msg/Transform',
    'geometry_msgs/msg/TransformStamped',
    'tf2_msgs/msg/TFMessage',
)


@functools.cache
def _types():
    """A typestore of TYPES alone, from their installed .msg files: rosbags' whole Kilted store
    takes ~0.25 s to import and build, a tenth of an episode's start-up; these take ~0.04 s."""
    from ament_index_python.packages import get_package_share_directory

    store = get_typestore(Stores.EMPTY)
    for name in TYPES:
        package, _, kind = name.split('/')
        text = (Path(get_package_share_directory(package)) / 'msg' / f'{kind}.msg').read_text()
        store.register(get_types_from_msg(text, name))
    return store


def serialize(msg) -> bytes:
    """A rosbags message -> its CDR bytes (little-endian, with the encapsulation header)."""
    return bytes(_types().serialize_cdr(msg, msg.__msgtype__))


def _type(name: str):
    return _types().types[name]


def _header(v: Sequence, frame: str = ''):
    time = _type('builtin_interfaces/msg/Time')(sec=int(v[0]), nanosec=int(v[1]))
    return _type('std_msgs/msg/Header')(stamp=time, frame_id=frame)


def clock_msg(v: Sequence):
    """/clock at (v[0], v[1])."""
    return _type('rosgraph_msgs/msg/Clock')(clock=_header(v).stamp)


def joint_state_msg(names: Sequence[str], v: Sequence):
    """/joint_states: stamp (v[0], v[1]) and the joints' positions v[2:]."""
    empty = np.zeros(0)
    return _type('sensor_msgs/msg/JointState')(
        header=_header(v),
        name=list(names),
        position=np.asarray(v[2:], dtype=float),
        velocity=empty,
        effort=empty,
    )


def tf_msg(frames: Sequence[tuple[str, str]], v: Sequence):
    """/tf: per (parent, child) frame, TRANSFORM_SLOTS numbers of `v` in turn."""
    vector, quaternion = _type('geometry_msgs/msg/Vector3'), _type('geometry_msgs/msg/Quaternion')
    transform, stamped = (
        _type('geometry_msgs/msg/Transform'),
        _type('geometry_msgs/msg/TransformStamped'),
    )
    n = len(TRANSFORM_SLOTS)
    transforms = []
    for k, (parent, child) in enumerate(frames):
        t = v[k * n : (k + 1) * n]
        transforms.append(
            stamped(
                header=_header(t, parent),
                child_frame_id=child,
                transform=transform(
                    translation=vector(x=t[2], y=t[3], z=t[4]),
                    rotation=quaternion(x=t[6], y=t[7], z=t[8], w=t[5]),
                ),
            )
        )
    return _type('tf2_msgs/msg/TFMessage')(transforms=transforms)


class StateMessages:
    """The station's /clock, /joint_states and /tf as serialized bytes."""

    def __init__(self, joint_names: Sequence[str], tf_tree: TfTree) -> None:
        self.joint_names = list(joint_names)
        self.tf_tree = tf_tree
        self.frames = [(t.parent, t.child) for t in tf_tree.moving({})]
        self._clock = MessageTemplate(clock_msg, ['i4', 'u4'], serialize)
        self._joint_states = MessageTemplate(
            lambda v: joint_state_msg(self.joint_names, v),
            ['i4', 'u4'] + ['f8'] * len(self.joint_names),
            serialize,
        )
        self._tf = MessageTemplate(
            lambda v: tf_msg(self.frames, v), TRANSFORM_SLOTS * len(self.frames), serialize
        )
        # The movable joints in TfTree.moving's order, with what a tick reads of each
        self._moving = [
            (j, j.kind in ('revolute', 'continuous'), tuple(float(v) for v in j.xyz))
            for j in tf_tree.joints
            if j.kind != 'fixed'
        ]

    def clock(self, time: float) -> bytes:
        return self._clock.encode(stamp_parts(time))

    def joint_states(self, positions: Sequence[float], time: float) -> bytes:
        """`positions` in `joint_names` order."""
        if len(positions) != len(self.joint_names):
            raise ValueError(f'{len(self.joint_names)} positions expected, got {len(positions)}')
        return self._joint_states.encode([*stamp_parts(time), *positions])

    def tf(self, positions: dict[str, float], time: float) -> bytes:
        """The movable joints' transforms at `positions` (by joint name), stamped `time`: the
        numbers of `TfTree.moving(positions)`, computed by the same float operations in the
        same order, written into one list (a Transform and two arrays per joint, then a row
        copy each, cost ~40 us of a tick's ~60; `former_tf` in the tests compares them bit
        for bit)."""
        sec, nanosec = stamp_parts(time)
        values: list[float] = []
        for j, revolute, xyz in self._moving:
            q = TfTree.position(j, positions)
            if revolute:  # TfTree._transform's quaternion product, term by term
                w0, x0, y0, z0 = j.quat
                c, s = math.cos(q / 2), math.sin(q / 2)
                ax, ay, az = (a * s for a in j.unit_axis)
                w = w0 * c - (x0 * ax + y0 * ay + z0 * az)
                x = w0 * ax + x0 * c + (y0 * az - z0 * ay)
                y = w0 * ay + y0 * c + (z0 * ax - x0 * az)
                z = w0 * az + z0 * c + (x0 * ay - y0 * ax)
                quat = (w, x, y, z) if w >= 0 else (-w, -x, -y, -z)
                values += (sec, nanosec, *xyz, *quat)
            else:  # prismatic (and any other kind) as TfTree computes it
                t = self.tf_tree._transform(j, q)
                values += (sec, nanosec, *t.translation.tolist(), *t.quat.tolist())
        return self._tf.encode(values)
