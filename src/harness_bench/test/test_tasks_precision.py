"""The precision tasks' success checks both ways: a staged success passes, each near miss
fails and says why."""

import numpy as np
from harness_bench.tasks import make_task
from snapshots import TABLE, arm, obj, world

# insert_peg_tight ---------------------------------------------------------------------------


def tight_peg(offset=(0.0, 0.0), depth=0.05, held=False, grip=None, away=(0.0, 0.0, 0.0)):
    socket = obj('socket', (-0.12, -0.08, TABLE + 0.025), 0.04)
    top = TABLE + 0.05
    peg = obj('peg', (-0.12 + offset[0], -0.08 + offset[1], top - depth + 0.04), 0.012)
    gripper = grip if grip is not None else (0.3 if held else 1.0)
    left = arm('left', gripper, ('peg',) if held else (), away)
    return world([socket, peg], left=left)


def test_insert_peg_tight():
    task = make_task('insert_peg_tight')
    assert task.category == 'precision' and task.judged_after_wrap_up
    done = task.check(tight_peg())
    assert done.success and '5.0 cm deep' in done.detail
    assert task.check(tight_peg(offset=(0.001, -0.001), depth=0.021)).success
    beside = task.check(tight_peg(offset=(0.02, 0.0), depth=-0.02))
    assert not beside.success and 'from the centre of the hole' in beside.detail
    # its bottom only just into the hole: not deep enough
    shallow = task.check(tight_peg(depth=0.015))
    assert not shallow.success and '1.5 cm below the top' in shallow.detail
    assert 'still held' in task.check(tight_peg(held=True)).detail
    assert 'not home' in task.check(tight_peg(away=(0.0, 0.2, 0.0))).detail
    assert 'only 0.50 open' in task.check(tight_peg(grip=0.5)).detail


def test_insert_peg_tight_is_tighter_than_insert_peg():
    tight, loose = make_task('insert_peg_tight'), make_task('insert_peg')
    built = {o.name: o for o in tight.scene(0, 0)}
    loose_built = {o.name: o for o in loose.scene(0, 0)}
    peg, socket = built['peg'], built['socket']
    assert np.isclose(2 * (socket.size[1] - peg.size[0]), 0.002)  # 2 mm in all
    assert socket.size[1] < loose_built['socket'].size[1]


# stack_small_parts --------------------------------------------------------------------------


def small_tower(middle=(0.0, 0.0, 0.0), top=(0.0, 0.0, 0.0), held=(), grip=1.0):
    base = np.array([0.1, 0.02, TABLE + 0.0125])
    objects = [
        obj('base_cube', base, 0.0125),
        obj('middle_cube', base + [0.0, 0.0, 0.025] + np.array(middle), 0.0125),
        obj('top_cube', base + [0.0, 0.0, 0.05] + np.array(middle) + np.array(top), 0.0125),
    ]
    return world(objects, right=arm('right', grip, held))


def test_stack_small_parts():
    task = make_task('stack_small_parts')
    assert task.category == 'precision'
    assert all(o.size == (0.0125,) * 3 for o in task.scene(0, 0))
    assert task.check(small_tower()).success
    assert task.check(small_tower(middle=(0.012, 0.0, 0.0), top=(-0.012, 0.01, 0.0))).success
    # 2 cm off passes for 4 cm blocks (stack_blocks_three) but not for 2.5 cm cubes
    off = task.check(small_tower(top=(0.0, 0.02, 0.0)))
    assert not off.success and 'the blue cube is off by (0.0, 2.0, 0.0) cm' in off.detail
    fallen = task.check(small_tower(top=(0.03, 0.0, -0.025)))
    assert not fallen.success and 'blue cube is off' in fallen.detail
    # the blue cube stands in the air: the z tolerance
    assert not task.check(small_tower(top=(0.0, 0.0, 0.01))).success
    held = task.check(small_tower(held=('top_cube',), grip=0.3))
    assert not held.success and 'blue cube is still held' in held.detail
    assert 'right gripper holds nothing' in task.check(small_tower(grip=0.5)).detail


# place_on_target ----------------------------------------------------------------------------


def on_target(offset=(0.0, 0.0), lifted=0.0, held=False, away=(0.0, 0.0, 0.0)):
    target = obj('target', (-0.1, -0.06, TABLE + 0.0005), 0.03)
    cube = obj('cube', (-0.1 + offset[0], -0.06 + offset[1], TABLE + 0.02 + lifted))
    left = arm('left', 0.4 if held else 1.0, ('cube',) if held else (), away)
    return world([target, cube], left=left)


def test_place_on_target():
    task = make_task('place_on_target')
    assert task.category == 'precision'
    target = next(o for o in task.scene(0, 0) if o.name == 'target')
    assert not target.collide and not target.movable
    done = task.check(on_target(offset=(0.006, -0.005)))
    assert done.success and '0.8 cm' in done.detail
    off = task.check(on_target(offset=(0.008, 0.008)))
    assert not off.success and '1.1 cm from the target' in off.detail
    assert 'not standing on the table' in task.check(on_target(lifted=0.03, held=True)).detail
    assert 'still held' in task.check(on_target(held=True)).detail
    assert 'not home' in task.check(on_target(away=(0.2, 0.0, 0.0))).detail
