"""Every task's success check both ways: a staged success passes, each near miss fails."""

from dataclasses import replace

import numpy as np
import pytest
from harness_bench.task import ArmSnapshot, ObjectState, WorldSnapshot
from harness_bench.tasks import TASKS, make_task

TABLE = 0.765
HOME = {'left': np.array([-0.2995, -0.2073, 0.9215]), 'right': np.array([0.3005, -0.2073, 0.9215])}
ROT = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def arm(name, gripper=1.0, holding=(), offset=(0.0, 0.0, 0.0)):
    return ArmSnapshot(gripper, tuple(holding), HOME[name] + np.array(offset), ROT, HOME[name], ROT)


def obj(name, xyz, size=0.02):
    return ObjectState(
        name, name, np.array(xyz, dtype=float), np.array([1.0, 0, 0, 0]), (size,) * 3
    )


def world(objects, left=None, right=None):
    return WorldSnapshot(
        {o.name: o for o in objects},
        {'left': left or arm('left'), 'right': right or arm('right')},
        TABLE,
    )


def test_registry_and_unknown_names():
    assert set(TASKS) == {'lift_cube', 'place_in_bowl', 'stack_blocks_two', 'handover_bar'}
    with pytest.raises(KeyError, match='known tasks: handover_bar, lift_cube'):
        make_task('lift_cubes')


@pytest.mark.parametrize('name', sorted(TASKS))
def test_layouts_are_deterministic_and_distinct(name):
    task = make_task(name)
    assert task.layouts >= 3 and task.step_limit > 0 and task.instruction and task.description
    scenes = [task.scene(layout, seed=0) for layout in range(task.layouts)]
    assert scenes[0] == task.scene(0, seed=0)
    assert scenes[0] != task.scene(0, seed=1)  # the seed jitters
    assert len({tuple(o.position for o in s) for s in scenes}) == task.layouts
    with pytest.raises(ValueError, match='layouts 0..'):
        task.scene(task.layouts, seed=0)


def lifted(z_above=0.12, held=True, **arm_args):
    cube = obj('cube', (-0.2, 0.0, TABLE + 0.02 + z_above))
    return world([cube], left=arm('left', 0.4, ('cube',) if held else (), **arm_args))


def test_lift_cube():
    task = make_task('lift_cube')
    assert task.check(lifted()).success
    assert task.check(lifted(offset=(0.1, 0.3, 0.1))).success  # arms need not be home
    near = task.check(lifted(z_above=0.095))
    assert not near.success and '9.5 cm' in near.detail
    dropped = task.check(lifted(held=False))
    assert not dropped.success and 'not held' in dropped.detail


def in_bowl(block_xy=(0.01, 0.0), held=False, left_grip=1.0, home_offset=(0, 0, 0)):
    bowl = obj('bowl', (0.0, 0.05, TABLE), 0.08)
    block = obj('block', (block_xy[0], 0.05 + block_xy[1], TABLE + 0.006 + 0.02))
    return world(
        [bowl, block], left=arm('left', left_grip, ('block',) if held else (), home_offset)
    )


def test_place_in_bowl():
    task = make_task('place_in_bowl')
    assert task.check(in_bowl()).success
    assert not task.check(in_bowl(block_xy=(0.07, 0.0))).success  # on the rim
    assert not task.check(in_bowl(held=True, left_grip=0.4)).success
    closed = task.check(in_bowl(left_grip=0.75))
    assert not closed.success and 'only 0.75 open' in closed.detail
    away = task.check(in_bowl(home_offset=(0.0, 0.16, 0.0)))
    assert not away.success and 'not home' in away.detail


def stacked(top_offset=(0.0, 0.0, 0.0), held=False, grip=1.0):
    base = obj('base_block', (0.0, 0.05, TABLE + 0.02))
    top = obj('top_block', np.array([0.0, 0.05, TABLE + 0.06]) + np.array(top_offset))
    return world([base, top], right=arm('right', grip, ('top_block',) if held else ()))


def test_stack_blocks_two():
    task = make_task('stack_blocks_two')
    assert task.check(stacked()).success
    assert task.check(stacked((0.024, -0.024, 0.011))).success
    assert not task.check(stacked((0.026, 0.0, 0.0))).success
    assert not task.check(stacked((0.0, 0.0, 0.013))).success
    assert not task.check(stacked(held=True, grip=0.4)).success
    assert not task.check(stacked(grip=0.5)).success


def test_arms_home_rotation_tolerance():
    task = make_task('stack_blocks_two')
    c, s = np.cos(np.radians(25)), np.sin(np.radians(25))
    turned = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ ROT
    w = stacked()
    w = replace(w, arms={**w.arms, 'left': replace(w.arms['left'], tcp_rotation=turned)})
    assert not task.check(w).success


def handed(holders=('right',), z_above=0.1, left_grip=1.0):
    bar = obj('bar', (0.0, 0.0, TABLE + 0.015 + z_above), 0.015)
    left = arm('left', left_grip, ('bar',) if 'left' in holders else ())
    right = arm('right', 0.3, ('bar',) if 'right' in holders else ())
    return world([bar], left=left, right=right)


def test_handover_bar():
    task = make_task('handover_bar')
    assert task.check(handed()).success
    assert not task.check(handed(holders=('left', 'right'))).success
    assert not task.check(handed(holders=('left',))).success
    assert not task.check(handed(z_above=0.04)).success
    assert not task.check(handed(left_grip=0.7)).success
