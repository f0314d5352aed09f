"""The pure parts of perception on synthetic points: clusters, colours, shapes and geometry,
queries and ids."""

from dataclasses import replace

import numpy as np
from arx_x5_description.embodiment import load_embodiment
from harness_perception.backends.pixels import _chroma, _chroma_distance, _fit_plane
from harness_perception.clusters import components
from harness_perception.colour import colour_of, families
from harness_perception.measure import Measured, covered, footprint, measure
from harness_perception.query import Query
from harness_perception.robot_body import RobotBody
from harness_perception.seam import Detection
from harness_perception.tracking import Tracker
from harness_types.robot_state import ArmState, RobotState

from arx_x5_description.urdf import station_urdf

TABLE = 0.765


def box_surface(centre, half, step=0.002, faces=('top', 'front', 'left', 'right')):
    """Points on the visible faces of an axis-aligned box (as a camera in front sees it)."""
    cx, cy, cz = centre
    hx, hy, hz = half
    xs = np.arange(-hx, hx + 1e-9, step)
    ys = np.arange(-hy, hy + 1e-9, step)
    zs = np.arange(-hz, hz + 1e-9, step)
    out = []
    if 'top' in faces:
        out += [(cx + x, cy + y, cz + hz) for x in xs for y in ys]
    if 'front' in faces:
        out += [(cx + x, cy - hy, cz + z) for x in xs for z in zs]
    if 'left' in faces:
        out += [(cx - hx, cy + y, cz + z) for y in ys for z in zs]
    if 'right' in faces:
        out += [(cx + hx, cy + y, cz + z) for y in ys for z in zs]
    return np.array(out)


def test_components_split_apart_and_join_touching():
    a = box_surface((0.0, 0.0, 0.8), (0.02, 0.02, 0.02))
    b = box_surface((0.1, 0.0, 0.8), (0.02, 0.02, 0.02))
    labels = components(np.concatenate([a, b]), 0.006)
    assert len(set(labels[: len(a)])) == 1 and len(set(labels[len(a) :])) == 1
    assert labels[0] != labels[-1]
    touching = box_surface((0.045, 0.0, 0.8), (0.02, 0.02, 0.02))
    assert len(set(components(np.concatenate([a, touching]), 0.006))) == 1
    assert len(components(np.zeros((0, 3)), 0.006)) == 0


def test_colour_names_survive_shading():
    red = np.array([[217, 31, 25], [110, 16, 12], [60, 9, 7]], np.uint8)  # lit, shaded, dark
    assert colour_of(red) == 'red'
    white = np.array([[235, 235, 230]] * 5 + [[110, 110, 108]] * 5, np.uint8)  # top and sides
    assert colour_of(white) == 'white'
    assert families(np.array([[5, 5, 5]], np.uint8))[0] == -1  # too dark to tell
    assert colour_of(np.array([[30, 77, 217]], np.uint8)) == 'blue'
    assert colour_of(np.array([[230, 200, 20]], np.uint8)) == 'yellow'


def test_a_box_on_the_table_and_the_same_box_held():
    half = (0.02, 0.02, 0.02)
    resting = measure(box_surface((0.1, 0.05, TABLE + 0.02), half), TABLE)
    assert resting.shape == 'cube'
    assert np.allclose(resting.position, [0.1, 0.05, TABLE + 0.02], atol=0.002)
    assert abs(resting.size[2] - 0.04) < 0.003
    held = measure(box_surface((0.1, 0.05, TABLE + 0.2), half), TABLE, 'held')
    assert np.allclose(held.position, [0.1, 0.05, TABLE + 0.2], atol=0.003)
    assert abs(held.size[2] - 0.04) < 0.004  # its own height, not its height above the table


def test_a_covered_box_takes_its_width_as_depth():
    lower = box_surface((0.0, 0.0, TABLE + 0.02), (0.02, 0.02, 0.02), faces=('front',))
    upper = box_surface((0.0, 0.0, TABLE + 0.06), (0.02, 0.02, 0.02))
    assert covered([lower, upper]) == [True, False]
    m = measure(lower, TABLE, 'covered')
    assert np.allclose(m.position[:2], [0.0, 0.0], atol=0.003)
    naive = measure(lower, TABLE)
    assert abs(naive.position[1]) > 0.015  # what the front face alone says


def test_shapes_from_geometry():
    angles = np.linspace(0, 2 * np.pi, 200)
    disc = np.array(
        [
            (r * np.cos(a), r * np.sin(a), TABLE + 0.02)
            for r in np.linspace(0, 0.03, 15)
            for a in angles
        ]
    )
    assert measure(disc, TABLE).shape == 'button'
    rim = np.array([(0.08 * np.cos(a), 0.08 * np.sin(a), TABLE + 0.04) for a in angles])
    floor = np.array(
        [
            (x, y, TABLE + 0.006)
            for x in np.linspace(-0.05, 0.05, 20)
            for y in np.linspace(-0.05, 0.05, 20)
        ]
    )
    bowl = measure(np.concatenate([rim, floor]), TABLE)
    assert bowl.shape == 'bowl' and np.allclose(bowl.position[:2], 0, atol=0.003)
    bar = measure(box_surface((0, 0, TABLE + 0.015), (0.1, 0.015, 0.015)), TABLE)
    assert bar.shape == 'bar'
    zone = np.array(
        [(x, y, TABLE + 0.001) for x in np.linspace(0, 0.1, 30) for y in np.linspace(0, 0.1, 30)]
    )
    assert measure(zone, TABLE).shape == 'zone'
    long, short, fill = footprint(disc[:, :2])
    assert 0.75 < fill < 0.85 and abs(long - short) < 0.005


def detection(colour, shape, x, y=0.0):
    m = Measured(shape, np.array([x, y, TABLE + 0.02]), np.array([0.04, 0.04, 0.04]), TABLE + 0.04)
    return Detection(colour, m, ['cam_head'])


def test_queries_match_colour_and_shape_words_and_select():
    red = detection('red', 'cube', -0.1)
    assert Query.parse('red block').matches(red.words)
    assert Query.parse('Red Cubes').matches(red.words)
    assert not Query.parse('blue cube').matches(red.words)
    assert Query.parse('').matches(red.words) and Query.parse('all').matches(red.words)
    assert Query.parse('the leftmost red box').selector == 'leftmost'


def test_ids_follow_objects_that_move_and_change_colour():
    tracker = Tracker()
    first = tracker.assign([detection('red', 'cube', 0.1), detection('red', 'cube', -0.1)])
    assert first == ['red_cube_2', 'red_cube']  # new ids left to right
    moved = tracker.assign([detection('red', 'cube', -0.02), detection('red', 'cube', 0.12)])
    assert moved == ['red_cube', 'red_cube_2']
    button = Tracker()
    (before,) = button.assign([detection('red', 'button', 0.0)])
    (after,) = button.assign([detection('green', 'button', 0.001)])  # it latched
    assert before == after == 'red_button'


class CountingBackend:
    """A backend that finds one red cube and counts its passes."""

    name = 'counting'
    needs_segmentation = False

    def __init__(self, reads_query: bool) -> None:
        self.reads_query = reads_query
        self.passes = 0

    def detect(self, views, state, query=''):
        self.passes += 1
        return [detection('red', 'cube', 0.1), detection('blue', 'cube', -0.1)]


def view(rgb_value: int):
    from harness_types.camera import CameraView

    rgb = np.full((4, 4, 3), rgb_value, np.uint8)
    depth = np.ones((4, 4), np.float32)
    return CameraView('cam_head', rgb, 2.0, 2.0, 2.0, 2.0, np.zeros(3), np.eye(3), depth)


def test_one_pass_serves_every_query_of_the_same_views():
    from harness_perception import Perception

    backend = CountingBackend(reads_query=False)
    perception = Perception(backend)
    assert [o.label for o in perception.locate([view(10)], None, 'red cube')] == ['red cube']
    assert [o.label for o in perception.locate([view(10)], None, 'blue cube')] == ['blue cube']
    assert backend.passes == 1
    perception.locate([view(11)], None, 'red cube')  # one pixel value changed: a new pass
    assert backend.passes == 2
    asking = CountingBackend(reads_query=True)  # detections that depend on the query
    perception = Perception(asking)
    perception.locate([view(10)], None, 'red cube')
    perception.locate([view(10)], None, 'blue cube')
    perception.locate([view(10)], None, 'blue cube')
    assert asking.passes == 2


def test_chroma_distance_is_the_norm_of_the_chromaticity_difference_to_the_bit():
    rng = np.random.default_rng(7)
    rgb = rng.integers(0, 256, size=(50_000, 3), dtype=np.uint8)
    rgb[:256] = np.arange(256, dtype=np.uint8)[:, None]  # the greys, sums of equal parts
    reference = np.median(_chroma(rgb[::97]), axis=0)
    expected = np.linalg.norm(_chroma(rgb) - reference, axis=1)
    assert np.array_equal(_chroma_distance(rgb, reference), expected)


def test_robot_body_contains_exactly_the_points_inside_a_box():
    """The bounds that skip far points change no answer: every point against every box in full."""
    emb = load_embodiment()
    body = RobotBody(station_urdf(), emb)
    rng = np.random.default_rng(3)

    def arm(name):
        joints = rng.uniform(-0.8, 0.8, 6) + [0, 1.2, 1.2, 0, 0, 0]
        return ArmState(
            name, joints, 1.0, np.zeros(3), np.zeros(4), np.zeros(3), fingers=(0.02, 0.02)
        )

    for _ in range(4):
        boxes = body.boxes_at(RobotState(arm('left'), arm('right'), 0, 0.0))
        near_links = np.concatenate([b.centre + rng.normal(0, 0.04, (500, 3)) for b in boxes])
        points = np.concatenate(
            [near_links, rng.uniform([-0.7, -0.6, 0.7], [0.7, 0.5, 1.4], (5000, 3))]
        )
        margin = 0.003
        expected = np.zeros(len(points), dtype=bool)
        for b in boxes:
            local = np.abs((points - b.centre) @ b.rotation)
            expected |= np.all(local <= b.half + margin, axis=1)
        assert expected.sum() > 100
        assert np.array_equal(body.contains(points, boxes, margin), expected)
    # A box of NaN (joints not measured) holds no point and leaves its neighbours' as they are.
    broken = [replace(boxes[1], centre=np.full(3, np.nan))] + boxes[2:]
    alone = body.contains(points, boxes[2:], margin)
    assert alone.any() and np.array_equal(body.contains(points, broken, margin), alone)


def test_the_table_plane_is_fitted_from_row_indices_as_from_a_copy_of_the_rows():
    rng = np.random.default_rng(9)
    n = 90_000
    points = np.column_stack(
        [rng.uniform(-0.5, 0.5, n), rng.uniform(-0.4, 0.4, n), rng.normal(TABLE, 0.002, n)]
    )
    points[::7, 2] += 0.05  # objects on it
    rows = np.flatnonzero(np.abs(points[:, 2] - TABLE) < 0.02)
    # as before the indices: the fit of a copy of the near points, all of its rows
    expected = _fit_plane(points[rows].copy(), np.arange(len(rows)))
    assert np.array_equal(_fit_plane(points, rows), expected)
    assert abs(expected[2] - TABLE) < 1e-3
