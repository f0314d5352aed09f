"""Every task's success check both ways: a staged success passes, each near miss fails."""

from dataclasses import replace

import numpy as np
import pytest
from harness_bench.layout import SAMPLED
from harness_bench.task import CATEGORIES, ObjectState
from harness_bench.tasks import TASKS, make_task
from snapshots import HOME, ROT, TABLE, arm, obj, world


def test_registry_and_unknown_names():
    assert len(TASKS) >= 30
    by_category = {c: [t for t in TASKS.values() if t.category == c] for c in CATEGORIES}
    assert all(len(tasks) >= 3 for tasks in by_category.values()), by_category
    assert {'stack_in_order', 'lift_tray', 'insert_peg', 'open_drawer', 'pick_moving'} <= set(TASKS)
    assert {'pick_pictured', 'press_in_order'} <= set(TASKS)
    assert {'lift_cube', 'place_in_bowl', 'stack_blocks_two', 'stack_blocks_three'} <= set(TASKS)
    assert {'press_button', 'handover_bar', 'pick_numbered', 'sort_by_colour'} <= set(TASKS)
    assert 'push_to_zone' in TASKS
    with pytest.raises(KeyError, match=r'known tasks: .*\bhandover_bar, .*\blift_cube, '):
        make_task('lift_cubes')


def test_a_task_module_is_checked_when_it_is_loaded(tmp_path, monkeypatch):
    """The registry refuses a task module without TASK, with another name, without a
    category of the five, or with fewer than three fixed layouts, saying which."""
    from harness_bench.tasks import load_task
    from harness_types.plugins import PluginError

    folder = tmp_path / 'extra_tasks'
    folder.mkdir()
    (folder / '__init__.py').write_text('')
    body = (
        'from harness_bench.tasks.lift_cube import LiftCube\n'
        'class Short(LiftCube):\n'
        '    name = {name!r}\n'
        '    fixed = LiftCube.fixed[:2]\n'
        '    layouts = 2\n'
        'TASK = Short\n'
    )
    (folder / 'short.py').write_text(body.format(name='short'))
    (folder / 'misnamed.py').write_text(body.format(name='other').replace('layouts = 2', ''))
    (folder / 'uncategorised.py').write_text(
        body.format(name='uncategorised').replace('layouts = 2', "category = 'misc'")
    )
    (folder / 'empty.py').write_text('x = 1\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr('harness_bench.tasks.FOLDER', 'extra_tasks')
    with pytest.raises(PluginError, match='at least 3'):
        load_task('short')
    with pytest.raises(PluginError, match="its Task is named 'other'"):
        load_task('misnamed')
    with pytest.raises(PluginError, match="category 'misc' is not one of"):
        load_task('uncategorised')
    with pytest.raises(PluginError, match='has no TASK'):
        load_task('empty')
    with pytest.raises(PluginError, match='no bench task'):
        load_task('absent')


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
    assert len(task.fixed) == task.layouts and task.regions


@pytest.mark.parametrize('name', sorted(TASKS))
def test_sampled_layouts_are_deterministic_and_keep_the_objects(name):
    fixed = make_task(name).scene(0, seed=0)
    sampled = [make_task(name).scene(SAMPLED, seed) for seed in range(4)]
    assert sampled[0] == make_task(name).scene(SAMPLED, 0)
    assert len({tuple(o.position for o in s) for s in sampled}) == 4
    for scene in sampled:
        assert sorted(o.name for o in scene) == sorted(o.name for o in fixed)
    with pytest.raises(ValueError, match='non-negative'):
        make_task(name).scene(SAMPLED, -1)


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


def tower(middle=(0.0, 0.0, 0.0), top=(0.0, 0.0, 0.0), held=(), grip=1.0):
    base = np.array([0.1, 0.02, TABLE + 0.02])
    objects = [
        obj('base_block', base),
        obj('middle_block', base + [0.0, 0.0, 0.04] + np.array(middle)),
        obj('top_block', base + [0.0, 0.0, 0.08] + np.array(middle) + np.array(top)),
    ]
    return world(objects, right=arm('right', grip, held))


def test_stack_blocks_three():
    task = make_task('stack_blocks_three')
    assert task.check(tower()).success
    assert task.check(tower(middle=(0.02, 0.0, 0.0), top=(-0.02, 0.0, 0.0))).success
    off = task.check(tower(top=(0.0, 0.03, 0.0)))
    assert not off.success and 'blue block is off' in off.detail
    assert not task.check(tower(middle=(0.03, 0.0, 0.0), top=(-0.03, 0.0, 0.0))).success
    assert not task.check(tower(held=('top_block',), grip=0.4)).success


def buttons(latched=('red_button',), grip=1.0):
    red = obj('red_button', (-0.1, 0.0, TABLE + 0.01))
    blue = obj('blue_button', (0.1, 0.0, TABLE + 0.01))
    w = world([red, blue], left=arm('left', grip))
    return replace(w, latched=frozenset(latched))


def test_press_button():
    task = make_task('press_button')
    assert task.check(buttons()).success
    assert 'not pressed' in task.check(buttons(latched=())).detail
    both = task.check(buttons(latched=('red_button', 'blue_button')))
    assert not both.success and 'blue button was pressed' in both.detail
    assert not task.check(buttons(grip=0.2)).success


def pushed(cube_xy=(0.02, -0.03), grasped=False, lifted=0.0):
    zone = obj('zone', (0.0, 0.1, TABLE + 0.0005), 0.07)
    cube = obj('cube', (cube_xy[0], 0.1 + cube_xy[1], TABLE + 0.02 + lifted))
    w = world([zone, cube])
    return replace(w, grasped=frozenset({'cube'} if grasped else ()))


def test_push_to_zone():
    task = make_task('push_to_zone')
    assert task.check(pushed()).success
    outside = task.check(pushed(cube_xy=(0.0, 0.075)))
    assert not outside.success and 'inside means within 7 cm' in outside.detail
    assert 'was grasped' in task.check(pushed(grasped=True)).detail
    assert not task.check(pushed(lifted=0.05)).success


def sorted_world(blue_in='blue_bin', held=()):
    bins = {'red_bin': (-0.1, 0.1), 'blue_bin': (0.1, 0.1)}
    objects = [obj(name, (*xy, TABLE), 0.08) for name, xy in bins.items()]
    for name, where, dx in (
        ('red_block_1', 'red_bin', -0.02),
        ('red_block_2', 'red_bin', 0.02),
        ('blue_block', blue_in, 0.0),
    ):
        x, y = bins[where]
        objects.append(obj(name, (x + dx, y, TABLE + 0.026)))
    return world(objects, left=arm('left', 0.4 if held else 1.0, held))


def test_sort_by_colour():
    task = make_task('sort_by_colour')
    assert task.check(sorted_world()).success
    wrong = task.check(sorted_world(blue_in='red_bin'))
    assert not wrong.success and 'blue_block: the blue_block is' in wrong.detail
    assert not task.check(sorted_world(held=('red_block_1',))).success


def dice(held='cube_3', z_above=0.12, also=None):
    cubes = [obj(f'cube_{n}', (-0.1 * n, 0.0, TABLE + 0.025), 0.025) for n in (1, 2, 3)]
    if held:
        i = int(held[-1]) - 1
        cubes[i] = obj(held, (-0.1, 0.0, TABLE + 0.025 + z_above), 0.025)
    holding = tuple(h for h in (held, also) if h)
    return world(cubes, left=arm('left', 0.5, holding))


def test_pick_numbered():
    task = make_task('pick_numbered')
    assert task.check(dice()).success
    assert 'is not held' in task.check(dice(held='cube_2')).detail
    assert 'only 8.0 cm' in task.check(dice(z_above=0.08)).detail
    assert 'wrong cube is held (cube_1)' in task.check(dice(also='cube_1')).detail
    scene = task.scene(0, seed=0)
    assert {o.label for o in scene} == {'white cube'} and sorted(o.marks for o in scene) == [
        1,
        2,
        3,
    ]


def in_order_world(task, order, offset=(0.0, 0.0, 0.0), grip=1.0, held=()):
    base = np.array([-0.15, 0.02, TABLE + 0.02])
    objects = [
        obj(f'{colour}_block', base + [0.0, 0.0, 0.04 * k] + (np.array(offset) if k == 2 else 0))
        for k, colour in enumerate(order)
    ]
    return world(objects, left=arm('left', grip, held))


def test_stack_in_order_follows_the_order_its_layout_drew():
    task = make_task('stack_in_order')
    task.scene(0, seed=0)
    order = task.order
    assert task.instruction.endswith(f'bottom to top: {", ".join(order)}.')
    assert task.check(in_order_world(task, order)).success
    assert not task.check(in_order_world(task, order[::-1])).success
    off = task.check(in_order_world(task, order, offset=(0.0, 0.03, 0.0)))
    assert not off.success and f'the {order[2]} block is off' in off.detail
    closed = task.check(in_order_world(task, order, grip=0.4))
    assert not closed.success and 'holds nothing but is only 0.40 open' in closed.detail
    # The goal the verifier measures follows the instruction.
    claims = task.claims(task.instruction)
    assert any(getattr(c, 'query', '') == f'{order[1]} block' for c in claims)
    assert task.claims('something else') == task.goal
    drawn = set()
    for seed in range(12):
        t = make_task('stack_in_order')
        t.scene(0, seed)
        drawn.add(t.order)
    assert len(drawn) > 2  # the seed draws the order too


def tray_world(holders=('left', 'right'), z_above=0.06, tilt_deg=0.0):
    a = np.radians(tilt_deg) / 2
    tray = ObjectState(
        'tray',
        'purple tray',
        np.array([0.0, -0.08, TABLE + 0.012 + z_above]),
        np.array([np.cos(a), np.sin(a), 0.0, 0.0]),
        (0.06, 0.16, 0.012),
    )
    arms = {n: arm(n, 0.4, ('tray',)) if n in holders else arm(n) for n in HOME}
    return world([tray], left=arms['left'], right=arms['right'])


def test_lift_tray():
    task = make_task('lift_tray')
    assert task.check(tray_world()).success
    one = task.check(tray_world(holders=('left',)))
    assert not one.success and 'not by both arms' in one.detail
    assert not task.check(tray_world(z_above=0.04)).success
    tilted = task.check(tray_world(tilt_deg=15.0))
    assert not tilted.success and 'tilted 15 degrees' in tilted.detail


def peg_world(offset=0.0, depth=0.05, held=False):
    socket = obj('socket', (-0.12, -0.08, TABLE + 0.025), 0.04)
    top = TABLE + 0.05
    peg = obj('peg', (-0.12 + offset, -0.08, top - depth + 0.04), 0.012)
    return world([socket, peg], left=arm('left', 0.3 if held else 1.0, ('peg',) if held else ()))


def test_insert_peg():
    task = make_task('insert_peg')
    assert task.check(peg_world()).success
    assert task.check(peg_world(offset=0.004, depth=0.021)).success
    beside = task.check(peg_world(offset=0.02))
    assert not beside.success and 'from the centre of the hole' in beside.detail
    assert not task.check(peg_world(depth=0.015)).success
    assert 'still held' in task.check(peg_world(held=True)).detail


def drawer_world(task, pulled=0.12, held=False):
    closed = task.closed
    drawer = obj('drawer', (closed[0], closed[1] - pulled, TABLE + 0.06), 0.09)
    handle = obj('handle', (closed[0], closed[1] - pulled - 0.118, TABLE + 0.06), 0.01)
    cabinet = obj('cabinet', (closed[0], closed[1] + 0.005, TABLE + 0.06), 0.1)
    left = arm('left', 0.3, ('handle',)) if held else arm('left')
    return world([cabinet, drawer, handle], left=left)


def test_open_drawer():
    task = make_task('open_drawer')
    task.scene(0, seed=0)  # the closed drawer's place comes from the layout
    assert task.check(drawer_world(task)).success
    shut = task.check(drawer_world(task, pulled=0.08))
    assert not shut.success and 'out 8.0 cm' in shut.detail
    assert 'handle is still held' in task.check(drawer_world(task, held=True)).detail


def moving_world(z_above=0.08, held=True):
    cube = obj('cube', (0.0, 0.0, TABLE + 0.02 + z_above))
    sled = obj('sled', (0.0, 0.0, TABLE + 0.006), 0.06)
    return world([sled, cube], left=arm('left', 0.4, ('cube',) if held else ()))


def test_pick_moving():
    task = make_task('pick_moving')
    assert task.check(moving_world()).success
    assert not task.check(moving_world(z_above=0.04)).success
    assert 'not held' in task.check(moving_world(held=False)).detail


def pictured_world(task, held=None, z_above=0.12):
    objects = [
        obj(name, (x, 0.0, TABLE + 0.03 + (z_above if name == held else 0.0)))
        for name, x in (('cube', -0.2), ('cylinder', 0.0), ('bar', 0.2))
    ]
    return world(objects, left=arm('left', 0.4, (held,) if held else ()))


def test_pick_pictured_wants_the_object_its_layout_shows():
    task = make_task('pick_pictured')
    task.scene(1, seed=0)
    shown = task.picture
    other = next(n for n in ('cube', 'cylinder', 'bar') if n != shown)
    assert task.check(pictured_world(task, shown)).success
    wrong = task.check(pictured_world(task, other))
    assert not wrong.success and 'the wrong object is held' in wrong.detail
    assert not task.check(pictured_world(task, shown, z_above=0.05)).success
    assert 'is not held' in task.check(pictured_world(task)).detail
    shown_by = set()
    for seed in range(12):
        t = make_task('pick_pictured')
        t.scene(0, seed)
        shown_by.add(t.picture)
    assert shown_by == {'cube', 'cylinder', 'bar'}  # the seed chooses what the picture shows


def pressed_world(order, grip=1.0):
    objects = [
        obj(f'{c}_button', (x, 0.0, TABLE + 0.01))
        for c, x in zip(('red', 'blue', 'yellow'), (-0.2, 0.0, 0.2), strict=True)
    ]
    w = world(objects, left=arm('left', grip))
    return replace(
        w,
        latched=frozenset(f'{c}_button' for c in order),
        latch_order=tuple(f'{c}_button' for c in order),
    )


def test_press_in_order_wants_the_stated_order():
    task = make_task('press_in_order')
    task.scene(2, seed=0)
    order = task.order
    assert task.instruction == f'Press the buttons in this order: {", ".join(order)}.'
    assert task.check(pressed_world(order)).success
    swapped = (order[1], order[0], order[2])
    wrong = task.check(pressed_world(swapped))
    assert not wrong.success and f'not {", ".join(order)}' in wrong.detail
    assert not task.check(pressed_world(order[:2])).success
    assert not task.check(pressed_world(order, grip=0.3)).success
    partial = task.check(pressed_world((order[0], order[2], order[1])))
    assert partial.score == pytest.approx(0.5 / 3)
