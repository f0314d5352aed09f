import math

import numpy as np
import pytest
from harness_bench.layout import SAMPLED
from harness_bench.randomization import (
    AXES,
    CAMERA_SHIFT_M,
    CAMERA_TURN_RAD,
    CLUTTER_AWAY_M,
    PARAPHRASES,
    TABLE_OFFSET_M,
    CameraMove,
    RandomizeError,
    axes_name,
    paraphrase,
    parse_axes,
    table_offset,
    vary,
)
from harness_bench.tasks import TASKS, make_task
from harness_types.colour_names import family_of

CAMERAS = ('cam_head', 'cam_left_wrist', 'cam_right_wrist')


def _vary(task: str, seed: int, axes: tuple[str, ...]):
    t = make_task(task)
    objects = t.scene(0, seed)
    return t, objects, vary(t, objects, seed, axes, CAMERAS)


def test_axes_are_parsed_in_a_fixed_order_and_bad_ones_are_named():
    assert parse_axes('') == parse_axes('none') == ()
    assert parse_axes('all') == AXES
    assert parse_axes('language, lighting') == ('lighting', 'language')
    with pytest.raises(RandomizeError, match="unknown randomisation axis 'fog'"):
        parse_axes('lighting,fog')
    with pytest.raises(RandomizeError, match='more than once'):
        parse_axes('camera,camera')
    with pytest.raises(RandomizeError, match='all and none stand alone'):
        parse_axes('all,lighting')
    assert parse_axes('lighting+camera') == ('lighting', 'camera')  # as the tables write it
    hostile = ','.join(['x' * 5000] * 50)
    with pytest.raises(RandomizeError) as refused:
        parse_axes(hostile)
    assert len(str(refused.value)) < 400
    assert axes_name(()) == 'none' and axes_name(AXES) == 'all'
    assert axes_name(('lighting', 'camera')) == 'lighting+camera'


def test_the_same_seed_gives_the_same_scene_and_another_seed_another():
    _, _, a = _vary('stack_blocks_two', 7, AXES)
    _, _, b = _vary('stack_blocks_two', 7, AXES)
    _, _, c = _vary('stack_blocks_two', 8, AXES)
    assert a == b
    assert a != c


def test_each_axis_draws_from_its_own_stream():
    """Turning one axis on or off leaves what the others draw unchanged."""
    _, _, everything = _vary('place_in_bowl', 3, AXES)
    _, _, lighting_only = _vary('place_in_bowl', 3, ('lighting',))
    _, _, no_clutter = _vary('place_in_bowl', 3, tuple(a for a in AXES if a != 'clutter'))
    assert lighting_only.lighting == everything.lighting
    assert no_clutter.table == everything.table and no_clutter.cameras == everything.cameras
    assert no_clutter.clutter == () and everything.clutter
    assert lighting_only.table is None and lighting_only.table_offset_m == 0.0


def test_no_axes_change_nothing():
    t, _, v = _vary('lift_cube', 1, ())
    assert v.lighting is None and v.table is None and v.clutter == ()
    assert v.table_offset_m == 0.0 and v.cameras == () and v.instruction == t.instruction


@pytest.mark.parametrize('seed', range(12))
def test_variations_stay_within_their_bounds(seed):
    _, _, v = _vary('sort_by_colour', seed, AXES)
    assert abs(v.table_offset_m) <= TABLE_OFFSET_M
    assert v.table_offset_m == table_offset(seed, AXES)
    for _name, move in v.cameras:
        assert max(map(abs, move.shift)) <= CAMERA_SHIFT_M
        assert max(map(abs, move.turn)) <= CAMERA_TURN_RAD
    assert math.isclose(np.linalg.norm(v.lighting.key_direction), 1.0, rel_tol=1e-3)
    assert v.lighting.key_direction[2] < -0.8  # from above
    # a table texture keeps to one colour family: the table stays table to the cameras
    assert family_of(v.table.rgb1) == family_of(v.table.rgb2)


@pytest.mark.parametrize('task', sorted(TASKS))
def test_distractors_share_no_colour_with_the_task_and_stand_away_from_it(task):
    t = make_task(task)
    for seed in range(4):
        objects = t.scene(SAMPLED, seed)
        v = vary(t, objects, seed, ('clutter',), CAMERAS)
        task_families = {family_of(o.rgba[:3]) for o in objects}
        for c in v.clutter:
            assert family_of(c.rgba[:3]) not in task_families, (c.label, task_families)
            assert c.label.split()[0] == family_of(c.rgba[:3])  # its label says its colour
            for o in objects:
                if o.parent:
                    continue
                gap = math.dist(c.position[:2], o.position[:2])
                assert gap >= CLUTTER_AWAY_M, (c.name, o.name, gap)


@pytest.mark.parametrize('task', sorted(TASKS))
def test_a_reworded_instruction_asks_for_the_same_goal(task):
    """A task that reads its instruction (its claims, its reference program) finds the same
    request in every paraphrase."""
    t = make_task(task)
    t.scene(0, 0)  # a task whose instruction changes with the layout sets it here
    for k in range(len(PARAPHRASES)):
        worded = PARAPHRASES[k].format(
            i=t.instruction, l=t.instruction[0].lower() + t.instruction[1:]
        )
        assert t.claims(worded) == t.claims(t.instruction), worded
    assert paraphrase(t.instruction, np.random.default_rng(0)) != t.instruction


def test_a_camera_move_shifts_and_turns_in_the_mount_frame():
    move = CameraMove((0.001, 0.0, 0.0), (0.0, 0.0, math.radians(90)))
    rotation = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # yawed 90 deg
    position, turned = move.applied(np.array([1.0, 2.0, 3.0]), rotation)
    np.testing.assert_allclose(position, [1.0, 2.001, 3.0])  # x of the mount is world y
    np.testing.assert_allclose(turned, rotation @ rotation, atol=1e-12)
