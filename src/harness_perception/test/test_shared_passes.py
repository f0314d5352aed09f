"""Perception passes shared between processes (shared_passes.py): the store, and how a
Perception takes another's pass only when it would have computed the same one."""

import json
import os

import numpy as np
import pytest
from harness_perception.measure import Measured
from harness_perception.seam import Detection
from harness_perception.shared_passes import SharedPass, SharedPasses
from harness_types.camera import CameraView

from harness_perception import Perception


def detection(x: float, colour: str = 'red', label: str = '') -> Detection:
    # Numbers with no short decimal form: JSON must keep every bit.
    position = np.array([x, 1.0 / 3.0, 0.7650000000000001])
    size = np.array([0.04, np.nextafter(0.04, 1.0), 0.1 / 3.0])
    return Detection(colour, Measured('cube', position, size, 0.8 + 1e-17), ['cam_head'], label)


def test_a_pass_reads_back_to_the_bit(tmp_path):
    store = SharedPasses(tmp_path)
    entry = SharedPass(
        [detection(np.pi / 10), detection(-0.1, 'blue', 'a bowl')],
        {'plane': [1e-3 / 7, 0.0, 0.765]},
        False,
        {'plane': [2e-3 / 7, 0.0, 0.7651]},
    )
    store.put('ab12', entry)
    back = store.get('ab12')
    assert repr(back) == repr(entry)
    assert back.detections[0].measured.position.dtype == np.float64
    assert store.get('cd34') is None


GOOD_DETECTION = {
    'colour': 'red', 'shape': 'cube', 'position': [0, 0, 0], 'size': [1, 1, 1], 'top': 0,
    'cameras': [], 'label': '',
}  # fmt: skip


def entry_text(detection_changes: dict | None = None, **changes) -> str:
    """An entry's JSON for key ab12 with one detection, changed as asked."""
    detection = GOOD_DETECTION | (detection_changes or {})
    entry = {
        'key': 'ab12', 'detections': [detection], 'state_before': {}, 'read_state': False,
        'state_after': {},
    }  # fmt: skip
    return json.dumps(entry | changes)


def test_a_well_formed_entry_reads(tmp_path):
    (tmp_path / 'ab12.json').write_text(entry_text())
    (found,) = SharedPasses(tmp_path).get('ab12').detections
    assert (found.colour, found.measured.size.tolist()) == ('red', [1.0, 1.0, 1.0])


@pytest.mark.parametrize(
    'text',
    [
        'not json',
        '{"key": "ab12"}',
        entry_text(key='other'),
        entry_text({'position': [0, 0]}),
        entry_text({'colour': 1}),
        entry_text({'cameras': 'cam'}),
        entry_text({'top': '0'}),
        entry_text({'size': [1, True, 1]}),
        entry_text(state_before=[]),
        entry_text(read_state='no'),
        entry_text(detections='x'),
    ],
)
def test_an_entry_that_cannot_be_read_whole_is_no_entry(tmp_path, text):
    (tmp_path / 'ab12.json').write_text(text)
    assert SharedPasses(tmp_path).get('ab12') is None


def test_a_folder_that_is_gone_costs_the_sharing_only(tmp_path):
    store = SharedPasses(tmp_path / 'gone')
    store.put('ab12', SharedPass([detection(0.1)], {}, False, {}))
    assert store.get('ab12') is None


def test_a_state_json_cannot_hold_leaves_the_pass_unshared(tmp_path):
    store = SharedPasses(tmp_path)
    store.put('ab12', SharedPass([detection(0.1)], {'plane': np.float32(1.0)}, False, {}))
    assert list(tmp_path.iterdir()) == []


def test_only_the_newest_entries_are_kept(tmp_path):
    store = SharedPasses(tmp_path, keep=3)
    for n in range(5):
        store.put(f'k{n}', SharedPass([detection(n / 10)], {}, False, {}))
        os.utime(tmp_path / f'k{n}.json', ns=(n * 10**9, n * 10**9))  # a clear order
    store.put('k5', SharedPass([], {}, False, {}))
    assert sorted(p.name for p in tmp_path.iterdir()) == ['k3.json', 'k4.json', 'k5.json']


class PrivateBackend:
    """A backend without the SharesPasses members: its passes stay its own."""

    name = 'private'
    needs_segmentation = False
    reads_query = False

    def __init__(self) -> None:
        self.passes = 0

    def detect(self, views, state, query=''):
        self.passes += 1
        return [detection(float(views[0].rgb.sum()))]


class CountingBackend(PrivateBackend):
    """A backend that shares passes: its detections depend on the views and, when `blind`
    (too little seen), on the state it keeps (a number)."""

    name = 'counting'

    def __init__(self, fingerprint: str = 'one', blind: bool = False) -> None:
        super().__init__()
        self.fingerprint = fingerprint
        self.blind = blind
        self.state = 0.0
        self.read_state = False

    def detect(self, views, state, query=''):
        self.passes += 1
        self.read_state = self.blind
        if not self.blind:
            self.state = float(views[0].rgb.sum())
        return [detection(self.state)]

    def pass_state(self) -> dict:
        return {'state': self.state}

    def adopt_state(self, state: dict) -> None:
        self.state = state['state']


def view(value: int) -> CameraView:
    rgb = np.full((4, 4, 3), value, dtype=np.uint8)
    return CameraView('cam_head', rgb, 1.0, 1.0, 2.0, 2.0, np.zeros(3), np.eye(3))


def test_a_perception_takes_the_pass_another_ran_on_the_same_input(tmp_path):
    first, second = CountingBackend(), CountingBackend()
    a, b = Perception(first, SharedPasses(tmp_path)), Perception(second, SharedPasses(tmp_path))
    found = a.detect([view(3)])
    assert repr(b.detect([view(3)])) == repr(found)
    assert (first.passes, second.passes) == (1, 0)
    assert second.state == first.state == 3 * 48  # and the state the pass left
    b.detect([view(4)])  # another input: a pass of its own, which `a` then takes
    assert second.passes == 1
    a.detect([view(4)])
    assert first.passes == 1 and first.state == 4 * 48
    # Ids stay each perception's own: `b` has tracked nothing it did not locate itself.
    assert a.known_ids() == b.known_ids() == []


def test_another_configuration_or_a_pass_that_read_another_state_is_not_taken(tmp_path):
    a = Perception(CountingBackend('one'), SharedPasses(tmp_path))
    other = CountingBackend('two')
    a.detect([view(3)])
    Perception(other, SharedPasses(tmp_path)).detect([view(3)])
    assert other.passes == 1  # another fingerprint: not the same backend

    class Another(CountingBackend):
        """Another backend that names its configuration the same."""

    another = Another('one')
    Perception(another, SharedPasses(tmp_path)).detect([view(3)])
    assert another.passes == 1  # another class: not the same backend

    blind, same, other_state = (CountingBackend('one', blind=True) for _ in range(3))
    blind.state, same.state, other_state.state = 1.0, 1.0, 2.0
    Perception(blind, SharedPasses(tmp_path)).detect([view(5)])
    Perception(same, SharedPasses(tmp_path)).detect([view(5)])
    assert same.passes == 0  # the state the pass read is the same: taken
    found = Perception(other_state, SharedPasses(tmp_path)).detect([view(5)])
    assert other_state.passes == 1 and found[0].measured.position[0] == 2.0  # its own state's


def test_a_state_the_backend_cannot_take_on_means_a_pass_of_its_own(tmp_path):
    class Refusing(CountingBackend):
        def adopt_state(self, state: dict) -> None:
            raise ValueError('not mine')

    Perception(CountingBackend(), SharedPasses(tmp_path)).detect([view(3)])
    refusing = Refusing()
    perception = Perception(refusing, SharedPasses(tmp_path))
    assert perception.detect([view(3)])[0].measured.position[0] == 3 * 48
    assert refusing.passes == 1 and perception.pass_counts == {'own': 1}


def test_pixels_takes_on_only_a_pixels_state():
    from harness_perception.backends.pixels import PixelPerception, Table

    pixels = PixelPerception(Table(0.765, (-0.5, 0.5), (-0.4, 0.4)), body=None)
    good = {'plane': [0.001, -0.002, 0.7651], 'fitted': True}
    pixels.adopt_state(good)
    assert pixels.pass_state() == good and pixels.table_top_z == 0.7651
    for bad in (
        {'plane': [0.0, 0.0], 'fitted': True},
        {'plane': [[0.0], [0.0], [1.0]], 'fitted': True},
        {'plane': ['0', '0', '1'], 'fitted': True},
        {'plane': [0, 0, 1]},
        {},
    ):
        with pytest.raises(ValueError):
            pixels.adopt_state(bad)
        assert pixels.pass_state() == good


def test_a_pixels_pass_that_saw_no_depth_is_taken_only_from_the_same_plane(tmp_path):
    """With no depth image the pass finds nothing and leaves the plane as it was: another
    perception with the same plane takes it, one whose plane differs runs its own (and keeps
    its own plane)."""
    from harness_perception.backends.pixels import PixelPerception, Table

    table = Table(0.765, (-0.5, 0.5), (-0.4, 0.4))
    writer, reader = PixelPerception(table, None), PixelPerception(table, None)
    writer.adopt_state({'plane': [0.0, 0.0, 0.77], 'fitted': True})
    a, b = Perception(writer, SharedPasses(tmp_path)), Perception(reader, SharedPasses(tmp_path))
    assert a.detect([view(3)]) == [] and writer.read_state
    same = PixelPerception(table, None)
    same.adopt_state({'plane': [0.0, 0.0, 0.77], 'fitted': True})
    c = Perception(same, SharedPasses(tmp_path))
    assert c.detect([view(3)]) == [] and c.pass_counts == {'shared': 1}  # the writer's plane
    assert b.detect([view(3)]) == [] and b.pass_counts == {'own': 1}
    assert reader.pass_state() == {'plane': [0.0, 0.0, 0.765], 'fitted': False}


def test_a_backend_that_does_not_share_writes_nothing(tmp_path):
    backend = PrivateBackend()
    perception = Perception(backend, SharedPasses(tmp_path))
    assert perception.shared is None
    perception.detect([view(3)])
    assert backend.passes == 1 and list(tmp_path.iterdir()) == []
