import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from harness_bench.randomization import AXES, NO_VARIATION, SceneVariation, Surface
from harness_types.tf_tree import TfTree
from harness_worker.scene_variation import moved_frames, texture_pixels
from harness_worker.worker import Worker, WorkerError

from arx_x5_description.urdf import station_urdf


@pytest.fixture(scope='module')
def worker():
    w = Worker(load_embodiment(), station_urdf())
    yield w
    w.close()


def _tf_optical(urdf: str, variation: SceneVariation, camera: str) -> tuple:
    """The camera's optical frame in the world as /tf_static gives it."""
    tree = TfTree(urdf)
    local = {t.child: t for t in moved_frames(tree.static(), variation)}
    tree.static = lambda: list(local.values())  # the moved fixed frames
    rotation, translation = tree.world({})[f'{camera}_optical']
    return rotation, translation


def test_a_randomised_scene_is_built_as_drawn(worker):
    result = worker.reset('stack_blocks_two', 0, 11, worker._token or '', AXES)
    v = result.variation
    assert v.axes == AXES and result.instruction == v.instruction
    station = worker.station
    m = station.model
    assert station.table_top_z == pytest.approx(worker.emb.table_top_z + v.table_offset_m)
    assert station.snapshot(0).table_top_z == station.table_top_z
    # the table body moved; its geoms and the floor wear textures
    assert m.body('table').pos[2] == pytest.approx(v.table_offset_m)
    table_geoms = np.flatnonzero(m.geom_bodyid == m.body('table').id)
    assert all(m.geom_matid[g] >= 0 for g in table_geoms) and m.ntex == 2
    # the distractors stand in the scene, named as objects
    names = {o.name for o in station.objects}
    assert {c.name for c in v.clutter} <= names and 'top_block' in names
    key = m.light('key')
    np.testing.assert_allclose(key.diffuse, v.lighting.key_diffuse, atol=1e-6)


@pytest.mark.parametrize('camera', ['cam_head', 'cam_left_wrist'])
def test_moved_cameras_see_from_where_tf_static_says(worker, camera):
    """The calibration stays true: the view's pose and /tf_static's optical frame agree."""
    result = worker.reset('lift_cube', 1, 4, worker._token or '', ('camera',))
    view = worker.station.render(camera, depth=False, segmentation=False)
    rotation, translation = _tf_optical(worker.urdf, result.variation, camera)
    np.testing.assert_allclose(view.position, translation, atol=1e-6)
    np.testing.assert_allclose(view.rotation, rotation, atol=1e-6)
    # and they did move from where an unvaried episode has them
    still, _ = _tf_optical(worker.urdf, NO_VARIATION, camera)
    assert not np.allclose(still, rotation, atol=1e-5)


def test_the_same_seed_renders_the_same_scene(worker):
    images = []
    for _ in range(2):
        worker.reset('place_in_bowl', 2, 5, worker._token or '', AXES)
        images.append(worker.station.render('cam_head', depth=False, segmentation=False).rgb)
    np.testing.assert_array_equal(images[0], images[1])


def test_bad_randomisation_is_refused(worker):
    with pytest.raises(WorkerError, match='unknown randomisation axis fog'):
        worker.reset('lift_cube', 0, 0, worker._token or '', ('fog',))
    with pytest.raises(WorkerError, match='a seed is a non-negative integer'):
        worker.reset('lift_cube', 0, -1, worker._token or '', ('table_height',))


def test_clutter_draws_the_same_with_the_table_moved_or_not(worker):
    token = worker._token or ''
    plain = worker.reset('place_in_bowl', 0, 6, token, ('clutter',)).variation
    moved = worker.reset('place_in_bowl', 0, 6, worker._token, ('clutter', 'table_height'))
    assert moved.variation.clutter == plain.clutter and moved.variation.table_offset_m


def test_a_real_world_is_not_randomised():
    class RealWorld:
        backend, simulated = 'ros2_control', False

        def contacts(self, command):
            raise AssertionError('not reached')

    w = Worker(load_embodiment(), station_urdf(), RealWorld())
    with pytest.raises(WorkerError, match='needs a simulated station'):
        w.reset('lift_cube', 0, 0, '', ('lighting',))


def test_textures_are_the_pattern_drawn():
    checker = texture_pixels(Surface('checker', (1.0, 0.0, 0.0), (0.0, 0.0, 1.0)), 8)
    assert checker[0, 0].tolist() == [255, 0, 0] and checker[0, 4].tolist() == [0, 0, 255]
    assert checker[4, 4].tolist() == [255, 0, 0]
    stripes = texture_pixels(Surface('stripes', (1.0, 1.0, 1.0), (0.0, 0.0, 0.0)), 8)
    assert (stripes[:, 2] == 0).all() and (stripes[:, 0] == 255).all()
    plain = texture_pixels(Surface('plain', (0.5, 0.5, 0.5), (0.0, 0.0, 0.0)), 8)
    assert (plain == 128).all()
