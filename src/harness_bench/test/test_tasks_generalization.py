"""The generalization tasks of the held-out set (lift_unseen, place_unseen_in_bowl,
pick_by_shape): what their layouts draw, their success checks both ways, and their goals
following the instruction."""

import colorsys

import numpy as np
from harness_bench.layout import SAMPLED
from harness_bench.tasks import TASKS, make_task
from harness_bench.tasks.lift_unseen import COLOURS, SHAPES
from snapshots import TABLE, UPRIGHT, arm, world
from snapshots import obj as staged

MINE = ('lift_unseen', 'place_unseen_in_bowl', 'pick_by_shape')


def state(name, label, xyz, size, quat=UPRIGHT):
    return staged(name, xyz, size, quat, label)


def scenes(name, seeds=range(24)):
    """(task, its objects) of sampled layouts, each task built for its own layout."""
    for seed in seeds:
        task = make_task(name)
        yield task, task.scene(SAMPLED, seed)


# The perception's hue bands (harness_perception.colour, which depends on this package).
BANDS = ((15, 'red'), (42, 'orange'), (75, 'yellow'), (170, 'green'), (260, 'blue'))
BANDS += ((330, 'purple'), (361, 'red'))


def hue(rgba):
    return 360.0 * colorsys.rgb_to_hsv(*rgba[:3])[0]


def family(rgba):
    return next(name for bound, name in BANDS if hue(rgba) < bound)


def test_the_held_out_shades_are_named_by_their_family_and_no_other_task_paints_them():
    """No other task's loose object (one a task may pick up: movable, not mounted on another)
    has a shade within 10 degrees of hue of a held-out one."""
    for shade, (label_word, _, rgba) in COLOURS.items():
        assert family(rgba) == label_word, shade
    for name, cls in TASKS.items():
        if name in MINE:
            continue
        for obj in cls().scene(0, 0):
            loose = obj.movable and not obj.parent and obj.slide is None
            if not loose or colorsys.rgb_to_hsv(*obj.rgba[:3])[1] < 0.3:  # white, grey, black
                continue
            for shade, (_, _, rgba) in COLOURS.items():
                gap = abs(hue(obj.rgba) - hue(rgba))
                assert min(gap, 360 - gap) >= 10, f'{name} paints its {obj.label} like {shade}'


def test_lift_unseen_draws_shape_colour_and_instruction_from_the_layout():
    drawn = set()
    for task, (obj,) in scenes('lift_unseen'):
        family_word, word, rgba = COLOURS[task.shade]
        assert obj.label == f'{family_word} {task.shape.noun}' and obj.rgba == rgba
        assert obj.size == task.shape.size and obj.position[2] == task.shape.half_height
        assert task.instruction.startswith(f'Pick up the {word} {task.shape.noun} and')
        claims = task.claims(task.instruction)
        assert claims[1].query == f'{word} {task.shape.noun}'
        # a reworded instruction names the same object
        assert task.claims('Please p' + task.instruction[1:]) == claims
        drawn.add((task.shape.name, task.shade))
    assert {s for s, _ in drawn} == {s.name for s in SHAPES}
    assert {c for _, c in drawn} == set(COLOURS)
    assert make_task('lift_unseen').claims('something else') == make_task('lift_unseen').goal


def lifted(task, above=0.12, held=True, quat=UPRIGHT):
    size = task.shape.size
    z = TABLE + task.shape.half_height + above
    obj = state('object', 'green block', (-0.2, 0.0, z), size, quat)
    return world([obj], left=arm('left', 0.4, ('object',) if held else ()))


def test_lift_unseen():
    for task, _ in scenes('lift_unseen', range(8)):
        assert task.check(lifted(task)).success, task.shape.name
        low = task.check(lifted(task, above=0.095))
        assert not low.success and '9.5 cm' in low.detail
        dropped = task.check(lifted(task, held=False))
        assert not dropped.success and 'not held' in dropped.detail
    # A tall box tilted 40 degrees in the fingers: its lowest corner counts, not its centre
    # (3.7 cm below the centre, where upright its bottom is 3.5 cm below).
    task = make_task('lift_unseen')
    task.shape = next(s for s in SHAPES if s.name == 'tall box')
    a = np.radians(40.0) / 2
    turned = (np.cos(a), np.sin(a), 0.0, 0.0)
    assert task.check(lifted(task, above=0.101)).success
    result = task.check(lifted(task, above=0.101, quat=turned))
    assert not result.success and 'only 9.9 cm above' in result.detail
    assert task.check(lifted(task, above=0.12, quat=turned)).success


def test_place_unseen_in_bowl_draws_another_colour_for_the_bowl():
    drawn = set()
    for task, (obj, bowl) in scenes('place_unseen_in_bowl'):
        assert COLOURS[task.shade][0] != COLOURS[task.bowl_shade][0]
        assert obj.label == f'{COLOURS[task.shade][0]} {task.shape.noun}'
        assert bowl.label == f'{COLOURS[task.bowl_shade][0]} bowl'
        assert bowl.size[0] == task.bowl_radius
        what, where = COLOURS[task.shade][1], COLOURS[task.bowl_shade][1]
        assert task.instruction == f'Put the {what} {task.shape.noun} into the {where} bowl.'
        released, inside = task.claims('Your task: p' + task.instruction[1:])
        assert (inside.query, inside.container) == (f'{what} {task.shape.noun}', f'{where} bowl')
        drawn.add((task.shape.name, task.bowl_shade))
    assert len({s for s, _ in drawn}) == len(SHAPES) and len({b for _, b in drawn}) >= 3


def in_bowl(task, offset=0.01, held=False, grip=1.0, home_offset=(0, 0, 0)):
    bowl = state('bowl', 'blue bowl', (0.0, 0.05, TABLE), (task.bowl_radius, 0.05, 0.006))
    z = TABLE + 0.006 + task.shape.half_height
    obj = state('object', 'green block', (offset, 0.05, z), task.shape.size)
    return world([bowl, obj], left=arm('left', grip, ('object',) if held else (), home_offset))


def test_place_unseen_in_bowl():
    for task, _ in scenes('place_unseen_in_bowl', range(8)):
        assert task.check(in_bowl(task)).success, task.shape.name
        rim = task.check(in_bowl(task, offset=task.bowl_radius - 0.006))
        assert not rim.success and 'from the centre of the blue bowl' in rim.detail
        held = task.check(in_bowl(task, held=True, grip=0.4))
        assert not held.success and 'still held' in held.detail
        closed = task.check(in_bowl(task, grip=0.75))
        assert not closed.success and 'only 0.75 open' in closed.detail
        away = task.check(in_bowl(task, home_offset=(0.0, 0.16, 0.0)))
        assert not away.success and 'not home' in away.detail


def test_pick_by_shape_names_the_shape_among_objects_of_one_colour():
    targets = set()
    for task, objects in scenes('pick_by_shape'):
        word = COLOURS[task.shade][1]
        assert task.instruction.startswith(
            f'Among the three {word} objects, pick up the {task.target} and'
        )
        assert len({o.rgba for o in objects}) == 1
        assert {o.label for o in objects} == {
            f'{COLOURS[task.shade][0]} {n}' for n in ('cube', 'cylinder', 'bar')
        }
        claims = task.claims(task.instruction)
        assert claims[1].query == f'{word} {task.target}'
        assert task.claims('Please a' + task.instruction[1:]) == claims
        targets.add(task.target)
    assert targets == {'cube', 'cylinder', 'bar'}


def by_shape(task, held='cube', above=0.12, also=()):
    halves = {'cube': 0.02, 'cylinder': 0.03, 'bar': 0.015}
    objects = [
        state(n, n, (x, 0.0, TABLE + h + (above if n == held else 0.0)), (0.02, 0.02, 0.02))
        for (n, h), x in zip(halves.items(), (-0.2, 0.0, 0.2), strict=True)
    ]
    return world(
        objects,
        left=arm('left', 0.4, (held,) if held else ()),
        right=arm('right', 0.4, also) if also else None,
    )


def test_pick_by_shape():
    task = make_task('pick_by_shape')
    task.scene(0, 0)
    for target in ('cube', 'cylinder', 'bar'):
        task.target = target
        assert task.check(by_shape(task, held=target)).success
        low = task.check(by_shape(task, held=target, above=0.09))
        assert not low.success and '9.0 cm' in low.detail
        other = next(n for n in ('cube', 'cylinder', 'bar') if n != target)
        wrong = task.check(by_shape(task, held=other))
        assert not wrong.success and f'wrong object is held ({other})' in wrong.detail
        both = task.check(by_shape(task, held=target, also=(other,)))
        assert not both.success and 'wrong object' in both.detail
