"""locate finds each task's objects within 1 cm of the truth on 3 layouts (the test reads the
truth from the simulator; perception sees only the rendered images)."""

import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from harness_kernel.perception import Perception, matches
from harness_worker.worker import Worker

from arx_x5_description.urdf import station_urdf


def views_of(worker, cameras=('cam_head', 'cam_left_wrist', 'cam_right_wrist')):
    return worker.observe(list(cameras))


@pytest.fixture(scope='module')
def worker():
    emb = load_embodiment()
    return Worker(emb, station_urdf())


def truth_center(worker, spec):
    pos = worker.station.object_pose(spec.name)[0]
    if spec.shape == 'bowl':
        return pos + [0, 0, spec.size[1] / 2]
    return pos


@pytest.mark.parametrize('task', ['lift_cube', 'place_in_bowl', 'stack_blocks_two'])
@pytest.mark.parametrize('layout', [0, 1, 2])
def test_locate_within_1cm(worker, task, layout):
    worker.reset(task, layout, 0, token=getattr(worker, '_token', None) or '')
    perception = Perception(worker.emb.table_top_z)
    found = {o.label: o for o in perception.locate(views_of(worker))}
    for spec in worker.station.objects:
        assert spec.label in found, f'{spec.label} not found'
        error = np.linalg.norm(found[spec.label].position - truth_center(worker, spec))
        assert error < 0.01, f'{spec.label}: {error * 100:.1f} cm off'
        assert 'cam_head' in found[spec.label].cameras


def test_ids_are_stable_and_queries_filter(worker):
    worker.reset('stack_blocks_two', 0, 0, token=worker._token or '')
    perception = Perception(worker.emb.table_top_z)
    first = perception.locate(views_of(worker), 'block')
    assert [o.id for o in first] == ['purple_block', 'yellow_block']
    again = perception.locate(views_of(worker), 'yellow')
    assert [o.id for o in again] == ['yellow_block']
    assert perception.locate(views_of(worker), 'bowl') == []
    assert matches('red cube', 'cubes') and not matches('red cube', 'blue cube')
