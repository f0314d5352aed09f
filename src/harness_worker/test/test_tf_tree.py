"""The TF tree from the URDF: one root, every link and camera frame reachable, and the
composed transforms agree with the kinematics (pinocchio)."""

import numpy as np
from arx_x5_description.embodiment import load_embodiment
from harness_types.tf_tree import TfTree
from harness_types.transforms import quat_to_matrix
from harness_worker.kinematics import StationKinematics

from arx_x5_description.urdf import station_urdf


def compose(transforms, frame):
    by_child = {t.child: t for t in transforms}
    rotation, translation = np.eye(3), np.zeros(3)
    while frame in by_child:
        t = by_child[frame]
        r = quat_to_matrix(t.quat)
        translation = r @ translation + t.translation
        rotation = r @ rotation
        frame = t.parent
    return frame, rotation, translation


def test_one_root_every_frame_and_the_kinematics_agree():
    emb = load_embodiment()
    urdf = station_urdf()
    tree = TfTree(urdf)
    assert tree.roots == ['world']
    rng = np.random.default_rng(3)
    q = {
        n: float(v)
        for n, v in zip(emb.arm_joint_names('left'), rng.uniform(emb.lower, emb.upper), strict=True)
    }
    q['left_gripper'] = 0.02
    transforms = tree.static() + tree.moving(q)
    children = {t.child for t in transforms}
    for frame in [
        'left_link6',
        'left_link8',
        'right_tcp',
        'cam_head_optical',
        'cam_left_wrist_optical',
        'table',
        'left_base_link',
    ]:
        assert frame in children
        root, *_ = compose(transforms, frame)
        assert root == 'world', frame
    kin = StationKinematics(urdf, emb).arms['left']
    joints = np.array([q[n] for n in emb.arm_joint_names('left')])
    _, rotation, translation = compose(transforms, 'left_tcp')
    expected = kin.fk(joints, 'tcp')
    assert np.allclose(translation, expected.position, atol=1e-9)
    assert np.allclose(rotation, expected.rotation, atol=1e-9)

    # The mimic finger follows its leader: the fingers move apart by twice the opening.
    def gap(opening):
        moved = {t.child: t for t in tree.moving({**q, 'left_gripper': opening})}
        return moved['left_link7'].translation[1] - moved['left_link8'].translation[1]

    assert np.isclose(gap(0.03) - gap(0.0), 0.06)
    # The optical frame looks along the camera's x.
    _, optical, _ = compose(transforms, 'cam_head_optical')
    _, body, _ = compose(transforms, 'cam_head')
    assert np.allclose(optical[:, 2], body[:, 0])  # optical z = the camera's forward x
