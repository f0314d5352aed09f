"""Sampled layouts on the station: the kinematics and the head camera answer the sampler, every
task's sampled layouts load, and the new objects behave (a drawer slides in its cabinet, a
conveyor's sled glides on)."""

import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from harness_bench.layout import SAMPLED
from harness_bench.tasks import TASKS
from harness_testing.staging import settle
from harness_worker.kinematics import StationKinematics
from harness_worker.layout_feasibility import StationFeasibility
from harness_worker.worker import Worker

from arx_x5_description.urdf import station_urdf


@pytest.fixture(scope='module')
def worker():
    w = Worker(load_embodiment(), station_urdf())
    yield w
    w.close()


def test_reach_and_view():
    emb = load_embodiment()
    f = StationFeasibility(StationKinematics(station_urdf(), emb), emb)
    assert f.reachable('left', np.array([-0.2, 0.0, 0.02]))
    assert not f.reachable('left', np.array([0.45, 0.3, 0.02]))  # across the table
    assert f.reachable('right', np.array([0.2, 0.0, 0.02]))
    assert f.in_view(np.array([0.0, 0.0, 0.02]))
    assert not f.in_view(np.array([0.0, -0.7, 0.02]))  # behind the camera
    assert not f.in_view(np.array([1.2, 0.3, 0.02]))  # far to the side


def test_a_point_counts_as_reached_only_with_a_margin_around_it():
    """A task builds its objects a little off the sampled spot: a point near the edge of the
    reach, grasped at some pitch alone, is refused when 1.5 cm beside it is not."""
    import math

    from harness_types.transforms import GRASP_PITCHES_DEG, tool_rotation
    from harness_worker.layout_feasibility import APPROACH_M, MARGIN_M

    emb = load_embodiment()
    kinematics = StationKinematics(station_urdf(), emb)
    f = StationFeasibility(kinematics, emb)
    kin = kinematics.arms['left']

    def alone(point):  # some pitch reaches the point and 10 cm above it
        p = np.asarray(point) + [0.0, 0.0, emb.table_top_z]
        return any(
            kin.ik(p, tool_rotation(math.radians(s))).ok
            and kin.ik(p + [0.0, 0.0, APPROACH_M], tool_rotation(math.radians(s))).ok
            for s in GRASP_PITCHES_DEG
            if s >= 50.0
        )

    refused = 0
    for y in np.arange(0.10, 0.30, 0.01):  # out along the left arm's reach
        point = np.array([-0.25, y, 0.02])
        if f.reachable('left', point):
            for dx, dy in ((MARGIN_M, 0.0), (-MARGIN_M, 0.0), (0.0, MARGIN_M), (0.0, -MARGIN_M)):
                assert alone(point + [dx, dy, 0.0]), (y, dx, dy)
        elif alone(point):
            refused += 1
    assert refused >= 1  # the margin refuses a point the pitch alone reached


def test_reachable_is_whether_some_pitch_reaches_every_point_whatever_the_order():
    """reachable() tries the shallowest pitch first; its answer is the definition's, pitch by
    pitch (some pitch at or steeper than asked reaches the point, 10 cm above it and the
    margin around both), on points inside, at the edge of and beyond the reach."""
    import math

    from harness_types.transforms import GRASP_PITCHES_DEG, tool_rotation
    from harness_worker.layout_feasibility import APPROACH_M, MARGIN_M

    emb = load_embodiment()
    kinematics = StationKinematics(station_urdf(), emb)
    f = StationFeasibility(kinematics, emb)
    kin = kinematics.arms['left']
    around = [(0.0, 0.0), (MARGIN_M, 0.0), (-MARGIN_M, 0.0), (0.0, MARGIN_M), (0.0, -MARGIN_M)]

    def reaches(point, steep):
        p = np.asarray(point) + [0.0, 0.0, emb.table_top_z]
        rotation = tool_rotation(math.radians(steep))
        return all(
            kin.ik(p + [dx, dy, dz], rotation).ok for dx, dy in around for dz in (0.0, APPROACH_M)
        )

    answers = []
    for y in (0.0, 0.18, 0.24, 0.27, 0.40):
        for pitch in (50.0, 75.0):
            point = np.array([-0.25, y, 0.02])
            wanted = any(reaches(point, s) for s in GRASP_PITCHES_DEG if s >= pitch)
            assert f.reachable('left', point, pitch) == wanted, (y, pitch)
            answers.append(wanted)
    assert True in answers and False in answers


@pytest.mark.parametrize('task', sorted(TASKS))
def test_every_task_loads_its_sampled_layouts(worker, task):
    for seed in range(2):
        reset = worker.reset(task, SAMPLED, seed, token=worker._token or '')
        assert reset.instruction
        names = {o.name for o in worker.station.objects}
        assert names == {o.name for o in TASKS[task]().scene(0, 0)}


def test_a_drawer_slides_out_of_its_cabinet_and_no_further(worker):
    worker.reset('open_drawer', 0, 0, token=worker._token or '')
    station = worker.station
    joint = station.model.joint('drawer_slide')
    assert tuple(joint.range) == pytest.approx((0.0, 0.15))
    start = station.object_pose('drawer')[0]
    handle = station.object_pose('handle')[0]
    station.data.qpos[joint.qposadr[0]] = 0.12
    settle(worker, 10)  # it stays where it was pulled (damped, no spring)
    pulled = start - station.object_pose('drawer')[0]
    assert pulled[1] == pytest.approx(0.12, abs=0.005) and abs(pulled[0]) < 1e-3
    assert station.object_pose('handle')[0] - handle == pytest.approx(-pulled, abs=1e-3)


def test_a_conveyor_sled_carries_its_cube(worker):
    worker.reset('pick_moving', 0, 0, token=worker._token or '')
    station = worker.station
    sled, cube = (station.object_pose(n)[0] for n in ('sled', 'cube'))
    settle(worker, 50)  # 2 s
    moved_sled = station.object_pose('sled')[0] - sled
    moved_cube = station.object_pose('cube')[0] - cube
    assert moved_sled[0] == pytest.approx(0.03, abs=0.003)  # 1.5 cm/s
    assert moved_cube[0] == pytest.approx(moved_sled[0], abs=0.005)


def test_a_task_picture_shows_its_object_alone(worker):
    from harness_bench.task import PICTURE
    from harness_worker.worker import PICTURE_BACKGROUND

    worker.reset('pick_pictured', 1, 0, token=worker._token or '')
    (view,) = worker.observe([PICTURE])
    assert view.name == PICTURE and view.rgb.shape[0] < 200  # a cut-out, enlarged
    shown = np.abs(view.rgb.astype(int) - PICTURE_BACKGROUND).max(axis=2) > 10
    assert 0.1 < shown.mean() < 0.9
    colour = np.median(view.rgb[shown], axis=0)
    wanted = {'cube': 0, 'cylinder': 2, 'bar': 1}[worker.task.picture]  # red, blue, yellow
    assert int(np.argmax(colour)) == wanted or (wanted == 1 and colour[0] > colour[2])
    worker.reset('lift_cube', 0, 0, token=worker._token)
    with pytest.raises(ValueError, match='shows no picture'):
        worker.observe([PICTURE])
