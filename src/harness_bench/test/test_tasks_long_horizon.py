"""The long-horizon tasks' success checks both ways: a staged success passes, each near miss
fails and says why."""

import numpy as np
from harness_bench.layout import SAMPLED
from harness_bench.tasks import make_task
from snapshots import TABLE, arm, obj, world


def test_long_horizon_tasks_are_registered_as_such():
    for name in ('kit_three', 'clear_table', 'assemble_peg_ring'):
        task = make_task(name)
        assert task.category == 'long_horizon' and task.judged_after_wrap_up
        assert 0 < task.step_limit <= 3000 and len(task.goal) >= 2


# kit_three ------------------------------------------------------------------------------------

SLOTS = {'red': (-0.26, 0.08), 'green': (-0.1, 0.04), 'yellow': (0.22, 0.08)}


def kitted(moved=None, lifted=0.0, held=None, grip=1.0):
    """Every block on its slot; `moved` = (colour, (dx, dy)) shifts one block off its slot."""
    objects = []
    for colour, (x, y) in SLOTS.items():
        objects.append(obj(f'{colour}_slot', (x, y, TABLE + 0.0005), 0.018))
        dx, dy = moved[1] if moved and moved[0] == colour else (0.0, 0.0)
        dz = lifted if moved and moved[0] == colour else 0.0
        objects.append(obj(f'{colour}_block', (x + dx, y + dy, TABLE + 0.02 + dz)))
    holding = (held,) if held else ()
    return world(objects, left=arm('left', grip, holding))


def test_kit_three():
    task = make_task('kit_three')
    assert task.check(kitted()).success
    assert task.check(kitted(moved=('green', (0.012, -0.012)))).success  # 1.7 cm off
    off = task.check(kitted(moved=('red', (0.025, 0.0))))
    assert not off.success and 'red block is 2.5 cm from the centre of the red zone' in off.detail
    assert off.score == 0.5  # two of three kitted
    perched = task.check(kitted(moved=('yellow', (0.0, 0.0)), lifted=0.03))
    assert not perched.success and 'does not rest on the table' in perched.detail
    held = task.check(kitted(held='green_block', grip=0.45))
    assert not held.success and 'the green block is still held' in held.detail
    closed = task.check(kitted(grip=0.5))
    assert not closed.success and 'holds nothing but is only 0.50 open' in closed.detail


def test_kit_three_swaps_colours_between_layouts_and_keeps_pairs_on_one_side():
    task = make_task('kit_three')
    seen = set()
    for seed in range(12):
        scene = {o.name: o for o in task.scene(SAMPLED, seed)}
        for colour in ('red', 'green', 'yellow'):
            slot, block = scene[f'{colour}_slot'], scene[f'{colour}_block']
            assert np.sign(slot.position[0]) == np.sign(block.position[0])  # one arm does both
            assert not slot.collide and not slot.movable and slot.label == f'{colour} zone'
        seen.add(tuple(sorted(scene, key=lambda n: scene[n].position[0])))
    assert len(seen) > 3


# clear_table ----------------------------------------------------------------------------------

BIN_XY = (0.0, -0.06)


def cleared(out=None, stacked=None, held=None, grip=1.0, home_offset=(0, 0, 0)):
    """All three objects in the bin; `out` names one left on the table, `stacked` one resting
    on top of another."""
    bx, by = BIN_XY
    objects = [obj('bin', (bx, by, TABLE), 0.11)]
    for name, (dx, dy), half in (
        ('red_cube', (0.0, 0.06), 0.02),
        ('yellow_cube', (0.0, 0.0), 0.02),
        ('green_cylinder', (0.0, -0.06), 0.03),
    ):
        z = TABLE + 0.006 + half
        if name == out:
            dx, dy, z = -0.25, 0.05, TABLE + half
        if name == stacked:
            dx, dy, z = 0.0, 0.06, TABLE + 0.006 + 0.04 + half
        objects.append(obj(name, (bx + dx, by + dy, z), half))
    holding = (held,) if held else ()
    return world(objects, left=arm('left', grip, holding, home_offset))


def test_clear_table():
    task = make_task('clear_table')
    assert task.check(cleared()).success
    left = task.check(cleared(out='yellow_cube'))
    assert not left.success and 'the yellow_cube is 25' in left.detail  # test labels are names
    assert left.score == 0.5
    on_top = task.check(cleared(stacked='green_cylinder'))
    assert not on_top.success and 'not down in the bin' in on_top.detail
    held = task.check(cleared(held='red_cube', grip=0.45))
    assert not held.success and 'still held' in held.detail
    away = task.check(cleared(home_offset=(0.0, 0.3, 0.0)))
    assert not away.success and 'left arm is not home' in away.detail


def test_clear_table_bin_lies_between_the_arms():
    task = make_task('clear_table')
    for seed in range(8):
        scene = {o.name: o for o in task.scene(SAMPLED, seed)}
        bin_ = scene['bin']
        assert abs(bin_.position[0]) < 0.04 and bin_.shape == 'bowl'
        for name in ('red_cube', 'yellow_cube', 'green_cylinder'):
            gap = np.linalg.norm(np.array(scene[name].position[:2]) - bin_.position[:2])
            assert gap > 0.17


# assemble_peg_ring ----------------------------------------------------------------------------

SOCKET_XY = (-0.12, -0.08)


def assembled(peg_off=0.0, peg_depth=0.05, ring_off=0.0, ring_gap=0.0, held=None, grip=1.0):
    """The peg in the socket's hole (its bottom `peg_depth` below the socket's 5 cm top), the
    ring on the socket around the peg (`ring_gap` between its bottom and the socket's top)."""
    sx, sy = SOCKET_XY
    top = TABLE + 0.05
    peg = obj('peg', (sx + peg_off, sy, top - peg_depth + 0.04), 0.012)
    socket = obj('socket', (sx, sy, TABLE + 0.025), 0.04)
    ring = obj('ring', (sx + peg_off + ring_off, sy, top + ring_gap + 0.01), 0.026)
    holding = (held,) if held else ()
    return world([peg, socket, ring], left=arm('left', grip, holding))


def test_assemble_peg_ring():
    task = make_task('assemble_peg_ring')
    assert task.check(assembled()).success
    assert task.check(assembled(peg_off=0.004, ring_off=0.008)).success  # leaning, loose
    out = task.check(assembled(peg_off=0.03, peg_depth=0.0))
    assert not out.success and 'from the centre of the hole' in out.detail
    assert out.score == 0.0  # no stage done: a ring over a peg outside the hole counts nothing
    perched = task.check(assembled(ring_gap=0.03))  # on the peg's top, not down around it
    assert not perched.success and 'its bottom +3.0 cm from the top of the yellow' in perched.detail
    assert perched.score == 0.4  # stage one done
    beside = task.check(assembled(ring_off=0.05))
    assert not beside.success and 'the blue block is 5.0 cm from the peg' in beside.detail
    held = task.check(assembled(held='ring', grip=0.4))
    assert not held.success and 'the blue block is still held' in held.detail
    shallow = task.check(assembled(peg_depth=0.015))
    assert not shallow.success and '1.5 cm below the top' in shallow.detail
