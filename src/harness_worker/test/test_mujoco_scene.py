"""Objects with joints of their own (mujoco_scene): a hinge as ObjectSpec.hinge states it."""

import math

import mujoco
import numpy as np
import pytest
from harness_bench.task import ObjectSpec
from harness_worker.mujoco_scene import HINGE_DAMPING, add_objects

TABLE = 0.765
BASE = ObjectSpec(
    'base', 'blue box', 'box', (0.08, 0.06, 0.04), (0.1, 0.3, 0.9, 1.0), (0.1, 0.0, 0.04),
    yaw=math.pi / 2, movable=False,
)  # fmt: skip


def lid(hinge, **kw):
    # The lid on the base's top, its hinge along the base's back top edge (the parent's +y
    # side): about -x, by the right-hand rule, it opens upward.
    return ObjectSpec(
        'lid', 'green lid', 'box', (0.08, 0.06, 0.005), (0.2, 0.7, 0.3, 1.0), (0.0, 0.0, 0.045),
        mass=0.1, parent='base', hinge=hinge, **kw,
    )  # fmt: skip


def build(*objects):
    spec = mujoco.MjSpec()
    add_objects(spec, list(objects), TABLE)
    model = spec.compile()
    return model, mujoco.MjData(model)


def test_a_hinge_joint_turns_the_body_about_the_stated_line_within_its_range():
    model, data = build(BASE, lid(((-1.0, 0.0, 0.0), (0.0, 0.06, 0.04), (0.0, 2.0))))
    joint = model.joint('lid_hinge')
    assert joint.type[0] == mujoco.mjtJoint.mjJNT_HINGE
    assert joint.limited[0] and np.allclose(joint.range, [0.0, 2.0])
    assert np.isclose(joint.damping[0], HINGE_DAMPING)
    assert model.body('lid').jntnum[0] == 1  # no free joint beside it
    # The base is turned a quarter turn, the lid with it: the body's frame is the parent's.
    assert np.allclose(joint.axis, [-1.0, 0.0, 0.0]) and np.allclose(joint.pos, [0, 0.06, -0.005])
    mujoco.mj_forward(model, data)
    edge = data.xpos[model.body('base').id] + data.xmat[model.body('base').id].reshape(3, 3) @ [
        0.0, 0.06, 0.04
    ]  # fmt: skip
    centre = data.xpos[model.body('lid').id].copy()
    data.qpos[model.joint('lid_hinge').qposadr[0]] = math.pi / 2  # a quarter open
    mujoco.mj_forward(model, data)
    moved = data.xpos[model.body('lid').id]
    # Turning keeps the lid's centre as far from the hinge line, and raises it
    assert np.isclose(np.linalg.norm(moved - edge), np.linalg.norm(centre - edge))
    assert moved[2] > centre[2] + 0.05
    lid_z = data.xmat[model.body('lid').id].reshape(3, 3)[:, 2]
    assert abs(lid_z[2]) < 1e-6  # its top faces sideways now


def test_a_lid_left_half_open_falls_shut_slowly_and_stops_at_its_range():
    model, data = build(BASE, lid(((-1.0, 0.0, 0.0), (0.0, 0.06, 0.04), (0.0, 2.0))))
    adr = model.joint('lid_hinge').qposadr[0]
    data.qpos[adr] = 1.0
    for _ in range(int(0.05 / model.opt.timestep)):
        mujoco.mj_step(model, data)
    assert 0.5 < data.qpos[adr] < 1.0  # damped: not in free fall
    for _ in range(int(2.0 / model.opt.timestep)):
        mujoco.mj_step(model, data)
    assert -0.02 < data.qpos[adr] < 0.05  # shut, not through its lower limit


@pytest.mark.parametrize(
    'hinge, words',
    [
        (((0.0, 0.0, 0.0), (0.0, 0.06, 0.04), (0.0, 2.0)), 'has no direction'),
        (((-1.0, 0.0, 0.0), (0.0, 0.06, 0.04), (0.5, 2.0)), 'must hold 0'),
        (((-1.0, 0.0, 0.0), (0.0, 0.06, 0.04), (0.0, 0.0)), 'has no width'),
        (((-1.0, 0.0, 0.0), (0.0, 0.06, 0.04), (-4.0, 4.0)), 'more than once round'),
        (((1.0, 0.0), (0.0, 0.06, 0.04), (0.0, 2.0)), 'hinge must be (axis'),
        (((-1.0, 0.0, 0.0), (0.0, 0.06, 0.04)), 'hinge must be (axis'),
    ],
)
def test_a_bad_hinge_is_refused_with_what_is_wrong(hinge, words):
    with pytest.raises(ValueError, match=r"object 'lid'") as e:
        build(BASE, lid(hinge))
    assert words in str(e.value)


def test_a_fixed_or_sliding_object_has_no_hinge():
    hinge = ((-1.0, 0.0, 0.0), (0.0, 0.06, 0.04), (0.0, 2.0))
    with pytest.raises(ValueError, match='only a movable object turns on a hinge'):
        build(BASE, lid(hinge, movable=False))
    with pytest.raises(ValueError, match='not both'):
        build(BASE, lid(hinge, slide=(0.0, -0.1, 0.0)))


def test_a_bin_is_open_at_the_top():
    model, data = build(
        ObjectSpec(
            'bin', 'green bin', 'bin', (0.08, 0.09, 0.04), (0.2, 0.7, 0.3, 1.0), (0, 0, 0.04)
        )
    )
    mujoco.mj_forward(model, data)
    tops = [data.geom_xpos[g][2] + model.geom_size[g][2] for g in range(model.ngeom)]
    assert np.isclose(max(tops), TABLE + 0.08)  # the walls reach the rim
    bottom = min(range(model.ngeom), key=lambda g: data.geom_xpos[g][2])
    assert np.isclose(data.geom_xpos[bottom][2] + model.geom_size[bottom][2], TABLE + 0.01)
