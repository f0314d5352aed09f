"""The layout sampler: regions, footprints, distances and bearings, mirroring, and what a
feasibility answer rules out (a stand-in feasibility with known answers)."""

import math

import numpy as np
import pytest
from harness_bench.layout import (
    CLEARANCE,
    SAMPLED,
    InfeasibleRegionsError,
    Region,
    layout_name,
    parse_layout,
    sample_spots,
)
from harness_bench.tasks import make_task


class Reach:
    """Feasibility with a reach circle per arm (centred at its base) and a view box."""

    def __init__(self, radius=0.55, view=((-0.6, 0.6), (-0.4, 0.4))):
        self.radius, self.view = radius, view
        self.asked: list[tuple[str, tuple]] = []

    def reachable(self, arm, point, pitch=50.0):
        self.asked.append((arm, tuple(np.round(point, 3))))
        base = np.array([-0.3 if arm == 'left' else 0.3, -0.45])
        return float(np.linalg.norm(np.asarray(point)[:2] - base)) <= self.radius

    def in_view(self, point):
        (x0, x1), (y0, y1) = self.view
        return x0 <= point[0] <= x1 and y0 <= point[1] <= y1


REGIONS = {
    'a': Region((-0.3, -0.1), (-0.1, 0.1), 0.03, 'left'),
    'b': Region((-0.35, 0.0), (-0.1, 0.15), 0.05, 'left', 0.02, 'a', (0.1, 0.2), (0.0, math.pi)),
    'c': Region((-0.3, 0.3), (-0.1, 0.1), 0.03, ''),
}


def test_a_seed_gives_one_layout_and_seeds_differ():
    one = sample_spots(REGIONS, np.random.default_rng(3), Reach())
    assert one == sample_spots(REGIONS, np.random.default_rng(3), Reach())
    assert one != sample_spots(REGIONS, np.random.default_rng(4), Reach())


@pytest.mark.parametrize('seed', range(20))
def test_regions_footprints_distances_and_bearings_hold(seed):
    spots = sample_spots(REGIONS, np.random.default_rng(seed), Reach())
    for name, (x, y) in spots.items():
        r = REGIONS[name]
        assert r.x[0] <= x <= r.x[1] and r.y[0] <= y <= r.y[1]
    names = list(spots)
    for i, m in enumerate(names):
        for n in names[i + 1 :]:
            gap = math.dist(spots[m], spots[n]) - REGIONS[m].radius - REGIONS[n].radius
            assert gap >= CLEARANCE - 1e-12
    (ax, ay), (bx, by) = spots['a'], spots['b']
    assert 0.1 <= math.hypot(bx - ax, by - ay) <= 0.2
    assert 0.0 <= math.atan2(by - ay, bx - ax) <= math.pi


def test_reach_is_asked_of_the_arms_a_region_names():
    reach = Reach()
    regions = {
        'near': Region((0.15, 0.2), (-0.15, -0.1), 0.02),  # nearer: x > 0, the right arm
        'both': Region((-0.05, 0.05), (-0.15, -0.1), 0.02, 'both', touch=((0.0, 0.0), (0.0, 0.1))),
        'none': Region((-0.3, -0.2), (-0.15, -0.1), 0.02, ''),
    }
    sample_spots(regions, np.random.default_rng(0), reach)
    arms = [arm for arm, _ in reach.asked]
    assert arms[0] == 'right' and arms[1:] == ['left', 'right', 'left', 'right']
    assert reach.asked[2][1][1] + 0.1 == pytest.approx(reach.asked[4][1][1])  # the touch points


def test_unreachable_or_unseen_regions_are_reported_not_sampled():
    far = {'a': Region((0.4, 0.5), (0.35, 0.45), 0.03, 'left')}
    with pytest.raises(InfeasibleRegionsError, match='a out of reach of the left arm'):
        sample_spots(far, np.random.default_rng(0), Reach())
    hidden = {'a': Region((-0.3, -0.2), (0.0, 0.1), 0.03)}
    with pytest.raises(InfeasibleRegionsError, match='out of the head camera view'):
        sample_spots(hidden, np.random.default_rng(0), Reach(view=((1, 2), (1, 2))))
    crowded = {k: Region((0.0, 0.01), (0.0, 0.01), 0.05, '') for k in 'ab'}
    with pytest.raises(InfeasibleRegionsError, match='b overlaps a'):
        sample_spots(crowded, np.random.default_rng(0), None)


def test_a_mirrored_layout_uses_the_other_arm_on_the_other_side():
    m = REGIONS['b'].mirrored()
    assert m.x == (0.0, 0.35) and m.reach == 'right' and m.near == 'a'
    assert m.bearing == pytest.approx((0.0, math.pi))
    assert Region((0, 1), (0, 1), 0.1, 'both').mirrored().reach == 'both'
    sides = {
        sample_spots(REGIONS, np.random.default_rng(s), None, mirror=True)['a'][0] > 0
        for s in range(10)
    }
    assert sides == {True, False}


def test_bad_regions_are_refused():
    with pytest.raises(ValueError, match='reach must be'):
        Region((0, 1), (0, 1), 0.1, 'middle')
    with pytest.raises(ValueError, match='x range'):
        Region((1, 0), (0, 1), 0.1)
    with pytest.raises(ValueError, match='not placed before it'):
        sample_spots({'b': REGIONS['b']}, np.random.default_rng(0), None)


def test_layout_names_and_parsing():
    assert layout_name(SAMPLED) == 'random' and layout_name(2) == '2'
    assert parse_layout('random') == SAMPLED and parse_layout(' Random ') == SAMPLED
    assert parse_layout('1') == 1
    for bad in ('-1', 'two', ''):
        with pytest.raises(ValueError, match="a number .* or 'random'"):
            parse_layout(bad)


def test_a_task_samples_through_its_feasibility():
    reach = Reach()
    scene = make_task('lift_cube').scene(SAMPLED, 5, reach)
    assert reach.asked and all(arm == 'left' for arm, _ in reach.asked)
    assert scene == make_task('lift_cube').scene(SAMPLED, 5, Reach())
    with pytest.raises(InfeasibleRegionsError):
        make_task('lift_cube').scene(SAMPLED, 5, Reach(radius=0.1))
