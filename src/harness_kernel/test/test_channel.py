"""The channel's frames: values survive, and whatever a hostile sender writes is a
ChannelError and nothing else."""

import socket
import struct
import threading

import numpy as np
import pytest
from harness_kernel.channel import Channel, ChannelClosedError, ChannelError, Codec
from harness_types.execution import Execution, TraceTick
from harness_types.scene import LocatedObject


def pair(types=()):
    a, b = socket.socketpair()
    return Channel(a, Codec(types)), Channel(b, Codec(types)), a


def test_values_survive():
    x, y, _ = pair((Execution, TraceTick))
    e = Execution(
        'home', 'both', 'COMPLETED', 'done', trace=[TraceTick(0.04, np.arange(14.0), np.ones(14))]
    )
    image = np.arange(640 * 480 * 3, dtype=np.uint8).reshape(480, 640, 3)
    # Frames larger than the socket's buffer: the sender needs a reader on the other end.
    sender = threading.Thread(
        target=x.send,
        args=({'op': 'x', 'e': e, 'image': image, 'n': [1, 2.5, None, 'a'], 3: True},),
    )
    sender.start()
    got = y.recv()
    sender.join()
    assert got['e'].trace[0].measured.tolist() == list(range(14))
    assert np.array_equal(got['image'], image) and got['n'] == [1, 2.5, None, 'a']
    assert got[3] is True


def test_types_not_allowed_are_refused():
    x, y, _ = pair()
    x.send(LocatedObject('a', 'b', np.zeros(3), np.zeros(3), 0.0))
    with pytest.raises(ChannelError, match="type 'LocatedObject' is not allowed"):
        y.recv()


@pytest.mark.parametrize(
    'frame',
    [
        b'\xff\xff\xff\xff',
        struct.pack('<I', 5) + b'{"a":',
        struct.pack('<I', 2) + b'{}' + struct.pack('<I', 10**6),
        struct.pack('<I', 40)
        + b'{"__nd__": 0, "dtype": "object", "shape": [1]}'[:40]
        + struct.pack('<I', 1)
        + struct.pack('<Q', 8)
        + b'x' * 8,
        struct.pack('<I', 2) + b'[]' + struct.pack('<I', 1) + struct.pack('<Q', 10**9),
        struct.pack('<I', 24) + b'{"__dc__": "os", "f": 1}' + struct.pack('<I', 0),
    ],
)
def test_garbage_is_a_channel_error(frame):
    x, y, raw = pair()
    raw.sendall(struct.pack('<Q', len(frame)) + frame)
    with pytest.raises(ChannelError):
        y.recv()


def test_a_huge_frame_is_refused_before_it_is_read():
    x, y, raw = pair()
    raw.sendall(struct.pack('<Q', 1 << 40))
    with pytest.raises(ChannelError, match='over the'):
        y.recv()


def test_a_closed_channel():
    x, y, raw = pair()
    raw.close()
    with pytest.raises(ChannelClosedError):
        y.recv()


def _header_only(header: bytes) -> bytes:
    return struct.pack('<I', len(header)) + header + struct.pack('<I', 0)


@pytest.mark.parametrize(
    'header',
    [
        b'{"__nd__": [300], "dtype": "uint8", "shape": [1]}',  # out of the dtype's range
        b'{"__nd__": [1e999], "dtype": "int64", "shape": [1]}',
        b'{"__nd__": 3, "dtype": "float64", "shape": [1]}',  # a buffer that is not there
        b'{"__nd__": 1e400, "dtype": "float64", "shape": [1]}',
        b'{"__nd__": [1, 2], "dtype": "float64", "shape": [5]}',  # the shape does not fit
        b'{"__nd__": [1], "dtype": "float64", "shape": [-1]}',
        b'{"__dc__": "RobotState", "fields": [1, 2]}',  # fields not a map
        b'{"__map__": [[1]]}',
    ],
)
def test_hostile_values_are_a_channel_error(header):
    x, y, raw = pair()
    frame = _header_only(header)
    raw.sendall(struct.pack('<Q', len(frame)) + frame)
    with pytest.raises(ChannelError):
        y.recv()
