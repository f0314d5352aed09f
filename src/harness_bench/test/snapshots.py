"""World snapshots staged by hand for the success checks' tests (what the worker would measure)."""

import numpy as np
from harness_bench.task import ArmSnapshot, ObjectState, WorldSnapshot

TABLE = 0.765
HOME = {'left': np.array([-0.2995, -0.2073, 0.9215]), 'right': np.array([0.3005, -0.2073, 0.9215])}
ROT = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
UPRIGHT = (1.0, 0.0, 0.0, 0.0)


def arm(name, gripper=1.0, holding=(), offset=(0.0, 0.0, 0.0)):
    """An arm `offset` from home, its gripper `gripper` open, holding `holding`."""
    return ArmSnapshot(gripper, tuple(holding), HOME[name] + np.array(offset), ROT, HOME[name], ROT)


def obj(name, xyz, size=0.02, quat=UPRIGHT, label=None):
    """An object at `xyz`; `size`: its half extents, or one number for a cube's."""
    half = tuple(size) if isinstance(size, tuple | list) else (size,) * 3
    return ObjectState(
        name, label or name, np.array(xyz, dtype=float), np.array(quat, dtype=float), half
    )


def world(objects, left=None, right=None, grasped=()):
    """The snapshot of `objects`, the arms home with open grippers unless given."""
    return WorldSnapshot(
        {o.name: o for o in objects},
        {'left': left or arm('left'), 'right': right or arm('right')},
        TABLE,
        grasped=frozenset(grasped),
    )
