"""The wire format: round trips of what observations and replies hold, openpi's form of numpy
values, and hostile messages, which must all end in ProtocolError."""

import msgpack
import numpy as np
import pytest
from harness_policy.protocol import Encoder, Policy, ProtocolError, packb, unpackb


def _array_map(data: bytes, dtype: object, shape: object) -> bytes:
    return msgpack.packb({b'__ndarray__': True, b'data': data, b'dtype': dtype, b'shape': shape})


def _scalar_map(data: object, dtype: object) -> bytes:
    return msgpack.packb({b'__npgeneric__': True, b'data': data, b'dtype': dtype})


@pytest.mark.parametrize(
    'array',
    [
        np.zeros((480, 640, 3), np.uint8) + np.arange(640, dtype=np.uint8)[:, None],
        np.linspace(0, 1, 14, dtype=np.float32),
        np.arange(12, dtype='>i4').reshape(3, 4),  # big-endian stays big-endian
        np.eye(4),
        np.array(2.5),  # 0-d
        np.zeros((0, 14), np.float32),  # empty
        np.zeros((3, 0, 2), np.int16),
        np.array([True, False]),
        np.array(['ab', 'c']),
        np.array([b'xy', b'z']),
        np.arange(4, dtype=np.uint64) + np.uint64(2**63),
        np.arange(6.0).reshape(2, 3).T,  # not C-contiguous
        np.array(['2020-01-01', '2021-06-30'], dtype='datetime64[ns]'),
    ],
)
def test_arrays_round_trip(array: np.ndarray) -> None:
    back = unpackb(packb({'x': array}))['x']
    assert back.dtype == array.dtype
    assert back.shape == array.shape
    np.testing.assert_array_equal(back, array)


@pytest.mark.parametrize(
    'scalar',
    [
        np.float64(0.1),
        np.float32(1.5),
        np.float16(-2.0),
        np.int8(-7),
        np.uint64(2**64 - 1),
        np.bool_(True),
        np.str_('hi'),
        np.bytes_(b'raw'),
    ],
)
def test_scalars_keep_their_dtype(scalar: np.generic) -> None:
    back = unpackb(packb([scalar]))[0]
    assert isinstance(back, np.generic)
    assert back.dtype == scalar.dtype
    assert back == scalar


def test_a_whole_message_round_trips() -> None:
    obs = {
        'observation/state': np.arange(14, dtype=np.float32),
        'observation/images/cam_head': np.full((4, 5, 3), 7, np.uint8),
        'observation/time': np.float64(3.25),
        'prompt': 'stack the blocks',
        'nested': {'list': [1, 2.5, None, True, b'\x00\xff'], 'tuple': (np.int32(3), 'x')},
        'empty': {},
    }
    back = unpackb(packb(obs))
    assert back.keys() == obs.keys()
    assert back['prompt'] == 'stack the blocks'
    assert back['nested']['list'] == [1, 2.5, None, True, b'\x00\xff']
    assert back['nested']['tuple'] == [3, 'x']  # msgpack has no tuples
    assert back['nested']['tuple'][0].dtype == np.int32
    assert back['empty'] == {}
    np.testing.assert_array_equal(back['observation/state'], obs['observation/state'])
    assert back['observation/images/cam_head'].dtype == np.uint8


def test_decoded_arrays_are_read_only_views() -> None:
    back = unpackb(packb({'x': np.arange(3.0)}))['x']
    assert not back.flags.writeable
    copy = np.array(back)
    copy[0] = 9  # what a policy that writes does
    assert back[0] == 0


def test_openpis_forms_decode() -> None:
    # openpi's packer sends np.float64 as a plain float and shapes as tuples: both read.
    message = msgpack.packb(
        {
            'a': {
                b'__ndarray__': True,
                b'data': np.arange(4, dtype='<f4').tobytes(),
                b'dtype': '<f4',
                b'shape': (2, 2),
            },
            't': np.float64(1.5),
        }
    )
    back = unpackb(message)
    np.testing.assert_array_equal(back['a'], [[0, 1], [2, 3]])
    assert back['t'] == 1.5


def test_the_wire_form_is_openpis() -> None:
    raw = msgpack.unpackb(packb({'a': np.zeros((2, 3), '<f4'), 's': np.int16(4)}))
    assert raw['a'] == {
        b'__ndarray__': True,
        b'data': bytes(24),
        b'dtype': '<f4',
        b'shape': [2, 3],
    }
    assert raw['s'] == {b'__npgeneric__': True, b'data': 4, b'dtype': '<i2'}


def test_the_encoder_writes_what_packb_writes_and_is_reusable() -> None:
    encoder = Encoder()
    big = {'image': np.full((480, 640, 3), 9, np.uint8), 'prompt': 'a'}
    small = {'state': np.arange(14, dtype=np.float32)}
    for message in (big, small, big):
        with encoder.packed(message) as frame:
            assert bytes(frame) == packb(message)
            back = unpackb(frame)  # a memoryview decodes too
        assert back.keys() == message.keys()
    with pytest.raises(ProtocolError, match='complex'), encoder.packed({'c': np.complex64(1)}):
        pass
    with encoder.packed(small) as frame:
        assert bytes(frame) == packb(small)


@pytest.mark.parametrize(
    'value',
    [
        np.array([object()], dtype=object),
        np.zeros(2, dtype=[('a', '<f4'), ('b', '<i4')]),
        np.zeros(2, dtype='V4'),
        np.zeros(2, dtype=np.complex64),
        np.complex128(1j),
    ],
)
def test_refused_dtypes_say_so(value: object) -> None:
    with pytest.raises(ProtocolError, match='dtype'):
        packb({'x': value})


def test_unsendable_types_say_so() -> None:
    with pytest.raises(ProtocolError, match='set'):
        packb({'x': {1, 2}})


HOSTILE = {
    'not msgpack': (b'\xc1', 'not valid msgpack'),
    'truncated': (b'\x92\x01', 'not valid msgpack'),
    'trailing bytes': (b'\x01\x02', 'after its msgpack value'),
    'deep nesting': (b'\x91' * 5000 + b'\x01', 'nests too deeply'),
    'huge length claim': (b'\xdd\xff\xff\xff\xff', 'not valid msgpack'),
    'bad utf-8': (b'\xa2\xff\xfe', 'UTF-8'),
    'extension type': (msgpack.packb(msgpack.ExtType(5, b'x')), 'extension type 5'),
    'unknown dtype': (_array_map(b'\x00' * 4, 'zz9', [1]), 'dtype'),
    'dtype by name': (_array_map(b'\x00' * 4, 'float32', [1]), "bad dtype 'float32'"),
    'structured dtype spec': (_array_map(b'\x00' * 8, 'i4,i4', [1]), 'bad dtype'),
    'dtype not a string': (_array_map(b'\x00' * 4, 4, [1]), 'bad dtype'),
    'object dtype': (_array_map(b'\x00' * 8, '|O', [1]), 'object dtype'),
    'void dtype': (_array_map(b'\x00' * 4, '|V4', [1]), 'void'),
    'complex dtype': (_array_map(b'\x00' * 8, '<c8', [1]), 'complex'),
    'zero item size': (_array_map(b'', '|S0', [1000]), 'item size'),
    'data too short': (_array_map(b'\x00' * 7, '<f4', [2]), 'needs 8 bytes, got 7'),
    'data too long': (_array_map(b'\x00' * 9, '<f4', [2]), 'needs 8 bytes, got 9'),
    'absurd shape': (_array_map(b'\x00' * 4, '<f4', [2**62, 2**62]), 'needs'),
    'absurd empty shape': (_array_map(b'', '<f4', [2**62, 2**62, 0]), 'not valid'),
    'negative size': (_array_map(b'\x00' * 4, '<f4', [-1]), 'bad shape'),
    'float size': (_array_map(b'\x00' * 4, '<f4', [1.0]), 'bad shape'),
    'bool size': (_array_map(b'\x00' * 4, '<f4', [True]), 'bad shape'),
    'shape not a list': (_array_map(b'\x00' * 4, '<f4', 1), 'bad shape'),
    'too many dimensions': (_array_map(b'\x00' * 4, '<f4', [1] * 33), 'bad shape'),
    'data not bytes': (_array_map('abcd', '<f4', [1]), 'not bytes'),
    'missing data': (msgpack.packb({b'__ndarray__': True, b'dtype': '<f4', b'shape': []}), 'data'),
    'scalar of object dtype': (_scalar_map(1, '|O'), 'object dtype'),
    'scalar out of range': (_scalar_map(300, '|u1'), 'cannot hold'),
    'scalar with list data': (_scalar_map([1, 2], '<f4'), 'data of type list'),
    'scalar with bad text': (_scalar_map('abc', '<f4'), 'cannot hold'),
    'int map key': (b'\x81\x01\x02', 'not valid msgpack'),
    # (msgpack's own words are empty: the sentence ended at its colon)
    'a byte no value begins with': (b'\xc1abc', 'not valid msgpack: FormatError$'),
}


@pytest.mark.parametrize('case', sorted(HOSTILE))
def test_hostile_messages_raise_protocol_error(case: str) -> None:
    message, says = HOSTILE[case]
    with pytest.raises(ProtocolError, match=says):
        unpackb(message)


def test_not_bytes_is_refused() -> None:
    with pytest.raises(ProtocolError, match='bytes'):
        unpackb('text')  # type: ignore[arg-type]


def test_policy_protocol_is_structural() -> None:
    class Echo:
        def infer(self, obs: dict) -> dict:
            return obs

    assert isinstance(Echo(), Policy)
    assert not isinstance(object(), Policy)
