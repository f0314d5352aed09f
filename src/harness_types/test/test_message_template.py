import struct

import numpy as np
import pytest
from harness_types.message_template import MessageTemplate


class Pair:
    """A stand-in message: a name, a stamp (int32, uint32) and two doubles."""

    def __init__(self, v):
        self.v = list(v)


def serialize(msg: Pair) -> bytes:
    # a header, a string and the numbers, little-endian, in an order unlike the slots'
    sec, nanosec, x, y = msg.v
    return b'\x00\x01\x00\x00' + b'name\x00' + struct.pack('<dIid', y, nanosec, sec, x)


def test_numbers_land_where_the_serializer_puts_them():
    template = MessageTemplate(Pair, ['i4', 'u4', 'f8', 'f8'], serialize)
    for values in ([3, 7, 0.5, -2.25], [-40, 999_999_999, 1e300, -0.0], [0, 0, 0.0, 0.0]):
        assert template.encode(values) == serialize(Pair(values))
    assert template.encode(np.array([1, 2, 3.0, 4.0])) == serialize(Pair([1, 2, 3.0, 4.0]))


def test_a_slot_the_message_does_not_hold_once_is_an_error():
    kinds = ['i4', 'u4', 'f8', 'f8']
    with pytest.raises(ValueError, match=r'slot 3 \(f8\) not found'):
        MessageTemplate(lambda v: Pair([v[0], v[1], v[2], 0.0]), kinds, serialize)
    with pytest.raises(ValueError, match=r'slot 2 \(f8\) found twice'):
        MessageTemplate(lambda v: Pair([v[0], v[1], v[2], v[2]]), ['i4', 'u4', 'f8'], serialize)
    with pytest.raises(ValueError, match='unknown slot kind'):
        MessageTemplate(Pair, ['i4', 'u4', 'f4', 'f8'], serialize)


def test_the_wrong_number_of_values_is_refused():
    template = MessageTemplate(Pair, ['i4', 'u4', 'f8', 'f8'], serialize)
    with pytest.raises(ValueError, match='4 values expected'):
        template.encode([1, 2, 3.0])
