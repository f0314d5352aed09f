"""The open category's success checks both ways (articulated things: drawers, lids): a staged
success passes, each near miss fails and says why."""

import numpy as np
from harness_bench.layout import SAMPLED
from harness_bench.tasks import TASKS, make_task
from snapshots import TABLE, arm, obj, world

OPEN_TASKS = ('close_drawer', 'open_box_lid', 'put_in_drawer')


def test_the_open_tasks_are_registered_in_their_category():
    for name in OPEN_TASKS:
        task = TASKS[name]
        assert task.category == 'open' and task.judged_after_wrap_up and len(task.fixed) >= 3
        # Every layout, fixed and sampled, builds (the sampled ones without the station).
        for layout in (*range(task.layouts), SAMPLED):
            names = [o.name for o in make_task(name).scene(layout, seed=5)]
            assert len(names) == len(set(names))


# close_drawer ----------------------------------------------------------------------------------


def drawer_world(task, out=0.003, held=False, left=None):
    closed = task.closed
    drawer = obj('drawer', (closed[0], closed[1] - out, TABLE + 0.06), 0.09)
    handle = obj('handle', (closed[0], closed[1] - out - 0.118, TABLE + 0.06), 0.01)
    cabinet = obj('cabinet', (closed[0], closed[1] + 0.005, TABLE + 0.06), 0.1)
    left = left or (arm('left', 0.3, ('handle',)) if held else arm('left'))
    return world([cabinet, drawer, handle], left=left)


def test_close_drawer_starts_open_and_wants_it_flush():
    task = make_task('close_drawer')
    specs = {o.name: o for o in task.scene(0, seed=0)}  # the closed place comes from the layout
    # It starts pulled out 8 to 12 cm, free to slide back exactly that far (to closed).
    pulled = -specs['drawer'].position[1] - 0.005
    assert 0.08 <= pulled <= 0.12 and np.isclose(specs['drawer'].slide[1], pulled)
    assert task.check(drawer_world(task)).success
    ajar = task.check(drawer_world(task, out=0.02))
    assert not ajar.success and 'still out 2.0 cm' in ajar.detail
    assert 0.0 < ajar.score < 1.0
    assert 'handle is still held' in task.check(drawer_world(task, held=True)).detail
    away = task.check(drawer_world(task, left=arm('left', offset=(0.0, 0.2, 0.0))))
    assert not away.success and 'left arm is not home' in away.detail
    shut_hand = task.check(drawer_world(task, left=arm('left', 0.1)))
    assert not shut_hand.success and 'left gripper holds nothing' in shut_hand.detail


# open_box_lid ----------------------------------------------------------------------------------


def lid_world(degrees=110.0, held=False, right=None):
    # The lid turned up about -x by `degrees` (its quaternion, w x y z), on a box at the left.
    a = -np.radians(degrees)
    lid = obj('lid', (-0.2, 0.0, TABLE + 0.12), 0.08, (np.cos(a / 2), np.sin(a / 2), 0.0, 0.0))
    box = obj('box', (-0.2, -0.05, TABLE + 0.035), 0.08)
    handle = obj('handle', (-0.2, 0.0, TABLE + 0.2), 0.01)
    left = arm('left', 0.3, ('handle',)) if held else arm('left')
    return world([box, lid, handle], left=left, right=right)


def test_open_box_lid_wants_the_lid_turned_up_and_let_go():
    task = make_task('open_box_lid')
    specs = {o.name: o for o in task.scene(1, seed=0)}
    axis, point, (lower, upper) = specs['lid'].hinge
    assert axis == (-1.0, 0.0, 0.0) and lower == 0.0 and np.isclose(np.degrees(upper), 110.0)
    ok = task.check(lid_world())
    assert ok.success and 'turned up 110 degrees' in ok.detail
    assert task.check(lid_world(65.0)).success  # open is at least 60 degrees
    shut = task.check(lid_world(0.0))
    assert not shut.success and 'turned up 0 degrees' in shut.detail and shut.score == 0.0
    ajar = task.check(lid_world(45.0))
    assert not ajar.success and 'turned up 45 degrees' in ajar.detail
    assert 'handle is still held' in task.check(lid_world(held=True)).detail
    shut_hand = task.check(lid_world(right=arm('right', 0.2)))
    assert not shut_hand.success and 'right gripper holds nothing' in shut_hand.detail


def test_open_box_lid_measures_the_turn_whichever_way_the_box_faces():
    turned = make_task('open_box_lid').turned
    # 70 degrees about an axis in the table's plane, any heading: the lid's face tilts 70.
    for heading in (0.0, 0.7, 2.0):
        axis = np.array([np.cos(heading), np.sin(heading), 0.0])
        a = np.radians(70.0)
        quat = (np.cos(a / 2), *(np.sin(a / 2) * axis))
        w = world([obj('lid', (0.0, 0.0, TABLE + 0.1), 0.08, quat)])
        assert np.isclose(np.degrees(turned(w)), 70.0)


# put_in_drawer ---------------------------------------------------------------------------------


def stored_world(task, cube_off=(0.01, -0.02, 0.0), out=0.002, held=()):
    closed = task.closed
    drawer = np.array([closed[0], closed[1] - out, TABLE + 0.06])
    objects = [
        obj('cabinet', (closed[0], closed[1] + 0.005, TABLE + 0.06), 0.1),
        obj('drawer', drawer, 0.09),
        obj('handle', drawer + [0.0, -0.118, 0.0], 0.01),
        obj('cube', drawer + [0.0, 0.0, -0.048 + 0.01 + 0.02] + np.array(cube_off)),
    ]
    left = arm('left', 0.4, held) if held else arm('left')
    return world(objects, left=left)


def test_put_in_drawer_wants_the_cube_inside_and_the_drawer_closed():
    task = make_task('put_in_drawer')
    specs = {o.name: o for o in task.scene(2, seed=0)}
    assert specs['drawer'].shape == 'bin'  # open at the top: it holds the cube
    assert np.isclose(specs['drawer'].position[1], -0.005)  # it starts closed
    assert task.check(stored_world(task)).success
    beside = task.check(stored_world(task, cube_off=(0.0, -0.2, 0.0)))
    assert not beside.success and 'not in the drawer' in beside.detail
    on_top = task.check(stored_world(task, cube_off=(0.0, 0.0, 0.08)))
    assert not on_top.success and 'from its rim' in on_top.detail
    ajar = task.check(stored_world(task, out=0.1))
    assert not ajar.success and 'still out 10.0 cm' in ajar.detail
    assert 'not in the drawer' not in ajar.detail  # the cube rides in the drawer
    assert 0.0 < ajar.score < 1.0
    held = task.check(stored_world(task, held=('cube',)))
    assert not held.success and 'cube is still held' in held.detail


def test_put_in_drawer_puts_the_cube_beside_the_drawers_path():
    task = make_task('put_in_drawer')
    for layout in (*range(task.layouts), SAMPLED):
        for seed in range(5):
            specs = {o.name: o for o in task.scene(layout, seed=seed)}
            cabinet, cube = specs['cabinet'].position, specs['cube'].position
            # Clear of the drawer and its handle pulled out (x within 9 cm of the cabinet's)
            # by the cube's half size and 3 cm, or clear of where it slides (beside it in y).
            assert abs(cube[0] - cabinet[0]) > 0.088 + 0.02 + 0.03 or cube[1] > cabinet[1]
