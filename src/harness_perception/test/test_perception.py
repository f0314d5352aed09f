"""locate's backends against the simulator's truth (the tests read the truth from the
simulator; perception sees only the rendered views and, for `pixels`, the measured joints)."""

import dataclasses

import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from harness_bench.layout import SAMPLED
from harness_bench.randomization import AXES
from harness_bench.task import ObjectSpec
from harness_bench.tasks import TASKS
from harness_perception.query import Query
from harness_testing.staging import hold_object, move_arm_to, stack_boxes, true_centre
from harness_types.transforms import quat_to_matrix
from harness_worker.worker import Worker

from arx_x5_description.urdf import station_urdf
from harness_perception import make_perception

CAMERAS = ['cam_head', 'cam_left_wrist', 'cam_right_wrist']


@pytest.fixture(scope='module')
def worker():
    w = Worker(load_embodiment(), station_urdf())
    yield w
    w.close()


@pytest.fixture(scope='module')
def urdf():
    return station_urdf()


def locate(worker, urdf, backend='pixels', query='', perception=None):
    perception = perception or make_perception(backend, worker.emb, urdf)
    views = worker.observe(CAMERAS, True, perception.needs_segmentation)
    return perception.locate(views, worker.station.state(worker.step), query)


def nearest(found, centre):
    return min(found, key=lambda o: np.linalg.norm(o.position - centre))


def reset(worker, task, layout):
    worker.reset(task, layout, 0, token=worker._token or '')


# Not the tasks with a cabinet or a lidded box (open_drawer, close_drawer, put_in_drawer,
# open_box_lid) and press_in_order: a cabinet's shaded side walls come out as small grey
# detections of their own, a box under its lid splits into faces, and a red button seen from
# near the left wrist camera splits a second red piece (open problems; their tasks' programs
# succeed regardless). Not fetch_from_drawer: its cube is hidden in the closed drawer, by design.
UNSEEN_WHOLE = {
    'open_drawer', 'close_drawer', 'put_in_drawer', 'open_box_lid', 'press_in_order',
    'fetch_from_drawer',
}  # fmt: skip


@pytest.mark.parametrize('task', sorted(set(TASKS) - UNSEEN_WHOLE))
def test_pixels_find_every_object_within_1cm(worker, urdf, task):
    for layout in range(TASKS[task].layouts):
        reset(worker, task, layout)
        found = locate(worker, urdf)
        assert len(found) == len(worker.station.objects), [o.label for o in found]
        for spec in worker.station.objects:
            obj = nearest(found, true_centre(worker.station, spec))
            error = np.linalg.norm(obj.position - true_centre(worker.station, spec))
            assert error < 0.01, f'{task} {layout}: {spec.label} {error * 100:.1f} cm off'
            colour = spec.label.split()[0]
            assert obj.label.split()[0] == colour, f'{spec.label} seen as {obj.label}'


@pytest.mark.parametrize('axis', AXES)
def test_pixels_find_every_object_under_each_randomisation_axis(worker, urdf, axis):
    """Lights, textures, distractors, a moved table or moved cameras: every object (the
    distractors too) within 1 cm and named by its colour; the measured table is the moved one."""
    for task, seed in (('stack_blocks_two', 3), ('place_in_bowl', 4), ('press_button', 5)):
        worker.reset(task, SAMPLED, seed, worker._token or '', (axis,))
        perception = make_perception('pixels', worker.emb, urdf)
        found = locate(worker, urdf, perception=perception)
        assert len(found) == len(worker.station.objects), [o.label for o in found]
        for spec in worker.station.objects:
            obj = nearest(found, true_centre(worker.station, spec))
            error = np.linalg.norm(obj.position - true_centre(worker.station, spec))
            assert error < 0.01, f'{task} {axis}: {spec.label} {error * 100:.1f} cm off'
            assert obj.label.split()[0] == spec.label.split()[0], (spec.label, obj.label)
        table = perception.table_top_z(0.0)
        assert abs(table - worker.station.table_top_z) < 0.002, (table, axis)


def test_oracle_and_pixels_agree_and_ids_are_stable(worker, urdf):
    reset(worker, 'stack_blocks_two', 0)
    oracle = locate(worker, urdf, 'oracle')
    assert [o.label for o in oracle] == ['purple block', 'yellow block']
    perception = make_perception('pixels', worker.emb, urdf)
    first = locate(worker, urdf, perception=perception, query='block')
    assert sorted(o.id for o in first) == ['purple_cube', 'yellow_cube']
    for o in first:
        twin = next(p for p in oracle if p.label.split()[0] == o.label.split()[0])
        assert np.linalg.norm(o.position - twin.position) < 0.005
    again = locate(worker, urdf, perception=perception, query='yellow')
    assert [o.id for o in again] == ['yellow_cube']
    assert perception.known_ids() == [o.id for o in first]


def test_a_query_that_matches_nothing_is_an_empty_list(worker, urdf):
    reset(worker, 'lift_cube', 0)
    assert locate(worker, urdf, query='blue bowl') == []
    assert locate(worker, urdf, query='unicorn') == []
    assert [o.label for o in locate(worker, urdf, query='red blocks')] == ['red cube']


def test_selectors_and_synonyms(worker, urdf):
    reset(worker, 'sort_by_colour', 0)
    bins = locate(worker, urdf, query='bin')
    assert sorted(o.label for o in bins) == ['blue bowl', 'red bowl']
    left = locate(worker, urdf, query='leftmost red cube')
    reds = locate(worker, urdf, query='red cube')
    assert len(reds) == 2 and len(left) == 1
    assert left[0].position[0] == min(o.position[0] for o in reds)
    assert Query.parse('cubes').matches({'red', 'cube'})
    assert not Query.parse('blue cube').matches({'red', 'cube'})


def test_a_decoy_of_a_similar_colour_is_not_the_red_cube(worker, urdf):
    """An orange cube and a dark red bowl beside the red cube: 'red cube' finds one object."""
    half = (0.025,) * 3
    worker.station.load(
        [
            ObjectSpec('cube', 'red cube', 'box', half, (0.85, 0.12, 0.1, 1), (-0.15, 0.0, 0.025)),
            ObjectSpec(
                'decoy', 'orange cube', 'box', half, (0.9, 0.45, 0.1, 1), (-0.07, 0.0, 0.025)
            ),
            ObjectSpec(
                'bowl',
                'dark red bowl',
                'bowl',
                (0.07, 0.04, 0.006),
                (0.45, 0.06, 0.05, 1),
                (0.08, 0.02, 0.0),
                mass=0.3,
            ),
        ]
    )
    found = locate(worker, urdf, query='red cube')
    assert len(found) == 1
    assert np.linalg.norm(found[0].position[:2] - [-0.15, 0.0]) < 0.01
    assert [o.label for o in locate(worker, urdf, query='orange')] == ['orange cube']
    assert [o.label for o in locate(worker, urdf, query='red bowl')] == ['red bowl']


def test_an_object_partly_hidden_by_an_arm_is_found(worker, urdf):
    reset(worker, 'lift_cube', 0)
    cube = true_centre(worker.station, worker.station.objects[0])
    arm = 'left' if cube[0] < 0 else 'right'
    assert move_arm_to(worker, arm, cube + [0.0, -0.04, 0.09])  # between the head camera and it
    view = worker.observe(['cam_head'], True, True)[0]
    hidden = (view.segmentation == 0).sum()
    found = locate(worker, urdf, query='red cube')
    assert len(found) == 1, 'the cube is partly hidden, not gone'
    assert hidden > 0
    assert np.linalg.norm(found[0].position - cube) < 0.015


def test_a_held_cube_is_measured_from_its_own_points(worker, urdf):
    reset(worker, 'lift_cube', 1)
    spec = worker.station.objects[0]
    assert hold_object(worker, spec.name, lift=0.15)
    found = locate(worker, urdf, query='red cube')
    assert len(found) == 1
    truth = true_centre(worker.station, spec)
    assert truth[2] - spec.size[2] > worker.emb.table_top_z + 0.1  # well off the table
    assert np.linalg.norm(found[0].position - truth) < 0.015
    rotation = quat_to_matrix(worker.station.object_pose(spec.name)[1])
    extent = 2 * np.abs(rotation) @ np.array(spec.size)  # the true axis-aligned extent
    assert np.all(np.abs(found[0].size - extent) < 0.01), (found[0].size, extent)


def test_stacked_blocks_are_measured_from_their_own_points(worker, urdf):
    reset(worker, 'stack_blocks_three', 0)
    stack_boxes(worker)
    found = locate(worker, urdf, query='cube')
    assert len(found) == 3
    for spec in worker.station.objects:
        obj = nearest(found, true_centre(worker.station, spec))
        assert obj.label.split()[0] == spec.label.split()[0]
        assert np.linalg.norm(obj.position - true_centre(worker.station, spec)) < 0.015
    top = max(found, key=lambda o: o.top)
    assert top.label == 'blue cube'
    assert abs(top.size[2] - 0.04) < 0.01  # not its height above the table


def test_a_shared_pixels_pass_is_the_pass_it_replaces(worker, urdf, tmp_path):
    """The verifier's eyes and the kernel share passes (shared_passes.py): a pass one pixels
    perception ran is what another takes instead of its own, detections and table plane to
    the bit, at rest and with an arm in view."""
    reset(worker, 'stack_blocks_two', 0)
    writer = make_perception('pixels', worker.emb, urdf, shared_passes=tmp_path)
    reader = make_perception('pixels', worker.emb, urdf, shared_passes=tmp_path)
    for moment in ('at rest', 'arm moved'):
        if moment == 'arm moved':
            cube = true_centre(worker.station, worker.station.objects[0])
            assert move_arm_to(worker, 'left' if cube[0] < 0 else 'right', cube + [0, 0, 0.12])
        views = worker.observe(CAMERAS, True, False)
        state = worker.station.state(worker.step)
        own = make_perception('pixels', worker.emb, urdf)
        expected = own.detect(views, state)
        assert repr(writer.detect(views, state)) == repr(expected), moment
        assert repr(reader.detect(views, state)) == repr(expected), moment
        assert reader.backend.plane.tobytes() == own.backend.plane.tobytes()
        assert reader.backend.fitted
    assert reader.pass_counts == {'shared': 2} and writer.pass_counts == {'own': 2}


def test_a_pixels_fingerprint_covers_what_its_robot_body_reads(urdf):
    """Two processes share a pixels pass only when their robot bodies are the same: the URDF,
    the margin and the embodiment's joint names."""
    emb = load_embodiment()
    renamed = dataclasses.replace(
        emb, gripper=dataclasses.replace(emb.gripper, mimic_joint='another_joint')
    )
    prints = [make_perception('pixels', e, urdf).backend.fingerprint for e in (emb, emb, renamed)]
    assert prints[0] == prints[1] != prints[2]
