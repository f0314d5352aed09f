"""The memory tasks' success checks both ways: a staged success passes, each near miss fails,
saying why."""

import numpy as np
from harness_bench.layout import SAMPLED
from harness_bench.tasks import make_task
from snapshots import TABLE, arm, obj, world


def built(name, layout=0, seed=0):
    task = make_task(name)
    scene = task.scene(layout, seed)
    return task, {o.name: np.array(o.position) for o in scene}


# swap_blocks -------------------------------------------------------------------------------


def swapped_world(
    task,
    at,
    shift=(0.0, 0.0),
    lifted=0.0,
    grasped=('red_block', 'blue_block'),
    holding=(),
    grip=1.0,
):
    red_xy = at['blue_block'][:2] + np.array(shift)
    blue_xy = at['red_block'][:2]
    objects = [
        obj('red_block', (*red_xy, TABLE + 0.02 + lifted)),
        obj('blue_block', (*blue_xy, TABLE + 0.02)),
    ]
    return world(objects, left=arm('left', grip, holding), grasped=grasped)


def test_swap_blocks():
    task, at = built('swap_blocks')
    assert task.category == 'memory'
    assert task.check(swapped_world(task, at)).success
    assert task.check(swapped_world(task, at, shift=(0.012, -0.012))).success  # 1.7 cm off
    off = task.check(swapped_world(task, at, shift=(0.025, 0.0)))
    assert not off.success and 'red block is 2.5 cm from where the blue block stood' in off.detail
    # Left where they stood: neither is where the other one was.
    still = world(
        [obj(n, (*at[n][:2], TABLE + 0.02)) for n in ('red_block', 'blue_block')],
        grasped=('red_block', 'blue_block'),
    )
    unswapped = task.check(still)
    assert not unswapped.success and 'blue block is' in unswapped.detail
    never = task.check(swapped_world(task, at, grasped=('red_block',)))
    assert not never.success and 'the blue block was never grasped' in never.detail
    held = task.check(swapped_world(task, at, lifted=0.05, holding=('red_block',), grip=0.4))
    assert not held.success and 'not on the table' in held.detail and 'still held' in held.detail
    closed = task.check(swapped_world(task, at, grip=0.4))
    assert not closed.success and 'holds nothing but is only 0.40 open' in closed.detail


def test_swap_blocks_remembers_the_start_of_the_layout_it_built():
    task, at = built('swap_blocks', SAMPLED, seed=5)
    assert task.check(swapped_world(task, at)).success
    other, _ = built('swap_blocks', SAMPLED, seed=6)
    assert not other.check(swapped_world(task, at)).success


# rebuild_tower -----------------------------------------------------------------------------


def rebuilt_world(
    task,
    at,
    order=None,
    zone_off=(0.0, 0.0),
    offset=(0.0, 0.0, 0.0),
    grasped=None,
    holding=(),
    grip=1.0,
    home_offset=(0.0, 0.0, 0.0),
):
    order = order or task.order
    zone = obj('zone', (*at['zone'][:2], TABLE + 0.0005), 0.06)
    base = np.array([*(np.array(at['zone'][:2]) + zone_off), TABLE + 0.02])
    objects = [zone]
    for level, colour in enumerate(order):
        extra = np.array(offset) if level == 2 else 0.0
        objects.append(obj(f'{colour}_block', base + [0.0, 0.0, 0.04 * level] + extra))
    grasped = [f'{c}_block' for c in order] if grasped is None else grasped
    return world(objects, left=arm('left', grip, holding, home_offset), grasped=grasped)


def test_rebuild_tower():
    task, at = built('rebuild_tower')
    order = task.order
    assert task.category == 'memory' and len(set(order)) == 3
    # The start: a tower of the drawn order, bottom to top, on the table.
    tower = sorted((n for n in at if n != 'zone'), key=lambda n: at[n][2])
    assert [n.split('_')[0] for n in tower] == list(order)
    assert task.check(rebuilt_world(task, at)).success
    assert task.check(rebuilt_world(task, at, zone_off=(0.035, -0.035))).success
    wrong = task.check(rebuilt_world(task, at, order=order[::-1]))
    assert not wrong.success and f'the {order[0]} block is not on the table' in wrong.detail
    swapped = task.check(rebuilt_world(task, at, order=(order[0], order[2], order[1])))
    assert not swapped.success and f'the {order[1]} block is off' in swapped.detail
    beside = task.check(rebuilt_world(task, at, zone_off=(0.045, 0.0)))
    assert not beside.success and 'on it means within 4 cm' in beside.detail
    top_off = task.check(rebuilt_world(task, at, offset=(0.0, 0.03, 0.0)))
    assert (
        not top_off.success and f'the {order[2]} block is off by (0.0, 3.0, 0.0)' in top_off.detail
    )
    never = task.check(rebuilt_world(task, at, grasped=[f'{order[1]}_block', f'{order[2]}_block']))
    assert not never.success and f'the {order[0]} block was never grasped' in never.detail
    away = task.check(rebuilt_world(task, at, home_offset=(0.0, 0.2, 0.0)))
    assert not away.success and 'left arm is not home' in away.detail


def test_rebuild_tower_draws_its_order_from_the_seed():
    drawn = set()
    for seed in range(12):
        task = make_task('rebuild_tower')
        task.scene(SAMPLED, seed)
        drawn.add(task.order)
    assert len(drawn) > 2
    # The instruction does not say the order: it is seen at the start only.
    task = make_task('rebuild_tower')
    task.scene(0, 0)
    assert not any(c in task.instruction for c in ('red', 'green', 'blue'))


# fetch_from_drawer -------------------------------------------------------------------------


def fetched_world(
    task, at, cube_off=(0.0, 0.0), lifted=0.0, grasped=('cube',), holding=(), grip=1.0
):
    zone = obj('zone', (*at['zone'][:2], TABLE + 0.0005), 0.06)
    cube = obj('cube', (*(at['zone'][:2] + cube_off), TABLE + 0.02 + lifted))
    return world([zone, cube], left=arm('left', grip, holding), grasped=grasped)


def test_fetch_from_drawer():
    task, at = built('fetch_from_drawer')
    assert task.category == 'memory'
    # The cube starts on the drawer, inside the cabinet (behind its front, under its roof).
    from harness_bench.tasks.fetch_from_drawer import CABINET, DRAWER_Z, FRONT, FRONT_Z, HALF

    cabinet = at['cabinet']
    assert cabinet[1] - 0.1 < at['cube'][1] < cabinet[1] + 0.1
    # The drawer's front panel reaches within 5 mm of the roof, above the cube's top.
    panel_top = CABINET[2] + DRAWER_Z + FRONT_Z + FRONT[2]
    roof = 2 * CABINET[2] - 0.01
    assert roof - 0.005 < panel_top < roof and at['cube'][2] + HALF < panel_top
    assert task.check(fetched_world(task, at)).success
    assert task.check(fetched_world(task, at, cube_off=(0.05, -0.05))).success
    outside = task.check(fetched_world(task, at, cube_off=(0.0, 0.07)))
    assert not outside.success and 'inside means within 6 cm' in outside.detail
    never = task.check(fetched_world(task, at, grasped=()))
    assert not never.success and 'never grasped' in never.detail
    held = task.check(fetched_world(task, at, lifted=0.05, holding=('cube',), grip=0.4))
    assert not held.success and 'not on the table' in held.detail and 'still held' in held.detail
    closed = task.check(fetched_world(task, at, grip=0.4))
    assert not closed.success and 'only 0.40 open' in closed.detail
