import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from harness_types.convert import stamp, stamp_parts
from harness_types.tf_tree import TfTree
from harness_worker.state_messages import StateMessages
from rclpy.serialization import deserialize_message
from rosbags.typesys import Stores, get_typestore
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from arx_x5_description.urdf import station_urdf


@pytest.fixture(scope='module')
def messages():
    emb = load_embodiment()
    return StateMessages(emb.all_joint_names(), TfTree(station_urdf()))


def test_the_bytes_are_the_messages_the_state_makes(messages):
    """What a subscriber reads from the template's bytes is the message built field by field,
    and a bag reader takes them as they are (exact length)."""
    rng = np.random.default_rng(0)
    names = messages.joint_names
    for _ in range(20):
        time = float(rng.uniform(0, 5000))
        values = rng.uniform(-3, 3, len(names))
        positions = dict(zip(names, values, strict=True))

        for data, kind in (
            (messages.clock(time), 'rosgraph_msgs/msg/Clock'),
            (messages.joint_states(list(values), time), 'sensor_msgs/msg/JointState'),
            (messages.tf(positions, time), 'tf2_msgs/msg/TFMessage'),
        ):
            get_typestore(Stores.ROS2_KILTED).deserialize_cdr(
                data, kind
            )  # refuses a length that is not exact

        assert deserialize_message(messages.clock(time), Clock) == Clock(clock=stamp(time))

        js = deserialize_message(messages.joint_states(list(values), time), JointState)
        assert js.header.stamp == stamp(time) and list(js.name) == names
        assert np.array_equal(js.position, values) and not js.velocity and not js.effort

        tf = deserialize_message(messages.tf(positions, time), TFMessage).transforms
        expected = messages.tf_tree.moving(positions)
        assert [(t.header.frame_id, t.child_frame_id) for t in tf] == [
            (e.parent, e.child) for e in expected
        ]
        for t, e in zip(tf, expected, strict=True):
            tr, rot = t.transform.translation, t.transform.rotation
            assert t.header.stamp == stamp(time)
            assert (tr.x, tr.y, tr.z) == tuple(e.translation)
            assert (rot.w, rot.x, rot.y, rot.z) == tuple(e.quat)


def test_joint_states_need_every_joint(messages):
    with pytest.raises(ValueError, match='positions expected'):
        messages.joint_states([0.0, 1.0], 0.0)


def former_tf(messages, positions: dict, time: float) -> bytes:
    """StateMessages.tf as it was: TfTree.moving's transforms, row by row."""
    transforms = messages.tf_tree.moving(positions)
    values = np.empty((len(transforms), 9))
    values[:, :2] = stamp_parts(time)
    for row, t in zip(values, transforms, strict=True):
        row[2:5] = t.translation
        row[5:9] = t.quat
    return messages._tf.encode(values.ravel())


def test_tf_bytes_are_those_of_the_tf_tree(messages):
    """/tf's numbers written straight into the template are TfTree.moving's, bit for bit: for
    positions of every joint, of some (the rest at 0 or following their leader), and at the
    joints' half turns (a quaternion's sign flips there)."""
    rng = np.random.default_rng(3)
    names = messages.joint_names
    cases = [
        dict.fromkeys(names, 0.0),
        {},
        dict.fromkeys(names, np.pi),
        dict.fromkeys(names, -np.pi),
    ]
    for _ in range(300):
        values = rng.uniform(-4, 4, len(names))
        keep = rng.random(len(names)) < (0.5 if len(cases) % 2 else 1.0)
        cases.append({n: float(v) for n, v, k in zip(names, values, keep, strict=True) if k})
    for k, positions in enumerate(cases):
        time = float(rng.uniform(0, 5000)) if k else 0.0
        assert messages.tf(positions, time) == former_tf(messages, positions, time)
