"""Messages serialized once: a message whose strings and sizes never change (/joint_states,
/tf, /clock of one station) is serialized a single time, and each tick only its numbers are
written into a copy of those bytes, which rclpy publishes as they are. Building and
serializing /tf's 16 transforms in Python cost ~0.6 ms a tick; writing 144 numbers costs
~10 us. No ROS here: the serializer is passed in (rclpy's `serialize_message`).

Where each number goes is not worked out from the CDR rules but found: the message is built
once with a distinct marker in every number and serialized by the serializer the publisher
would use, and each marker's bytes must occur exactly once. So the bytes written later are the
serializer's own bytes, as a test compares for random values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

KINDS = {'f8': np.dtype('<f8'), 'i4': np.dtype('<i4'), 'u4': np.dtype('<u4')}


def marker(kind: str, index: int) -> float | int:
    """The value slot `index` of `kind` holds while the template is made: bytes that nothing
    else in a message has (huge doubles, integers of unusual bit patterns)."""
    if kind == 'f8':
        return -(1.0 + (index + 1) / 4096) * 2.0**1000
    if kind == 'i4':
        return -(0x2A5A0000 + index)
    if kind == 'u4':
        return 0x3A5A0000 + index
    raise ValueError(f'unknown slot kind {kind!r} (kinds: {", ".join(KINDS)})')


class MessageTemplate:
    """`build(values)` makes the message with `values[i]` in slot i, whose type `kinds[i]` is
    'f8' (float64), 'i4' (int32) or 'u4' (uint32); `encode(values)` gives the bytes the
    serializer would give for `build(values)`."""

    def __init__(
        self,
        build: Callable[[list], Any],
        kinds: Sequence[str],
        serialize: Callable[[Any], bytes],
    ) -> None:
        self.kinds = tuple(kinds)
        data = serialize(build([marker(k, i) for i, k in enumerate(self.kinds)]))
        self._bytes = np.frombuffer(data, dtype=np.uint8).copy()
        # per kind: the slots of that kind, and the byte index of each of their bytes
        self._groups: list[tuple[np.dtype, np.ndarray, np.ndarray]] = []
        for kind, dtype in KINDS.items():
            slots = [i for i, k in enumerate(self.kinds) if k == kind]
            if not slots:
                continue
            offsets = []
            for i in slots:
                pattern = np.array([marker(kind, i)], dtype=dtype).tobytes()
                at = data.find(pattern)
                if at < 0 or data.find(pattern, at + 1) >= 0:
                    where = 'not found' if at < 0 else 'found twice'
                    raise ValueError(
                        f'slot {i} ({kind}) {where} in the serialized message: '
                        f'build() must put values[{i}] into exactly one {kind} field'
                    )
                offsets.append(at)
            index = np.asarray(offsets)[:, None] + np.arange(dtype.itemsize)
            self._groups.append((dtype, np.asarray(slots), index))
        if sum(len(s) for _, s, _ in self._groups) != len(self.kinds):
            unknown = sorted(set(self.kinds) - set(KINDS))
            raise ValueError(f'unknown slot kinds {unknown} (kinds: {", ".join(KINDS)})')

    def encode(self, values: Sequence[float] | np.ndarray) -> bytes:
        """The serialized message with `values` in its slots (integers as exact floats)."""
        values = np.asarray(values, dtype=float)
        if values.shape != (len(self.kinds),):
            raise ValueError(f'{len(self.kinds)} values expected, got shape {values.shape}')
        out = self._bytes.copy()
        for dtype, slots, index in self._groups:
            out[index] = values[slots].astype(dtype).view(np.uint8).reshape(index.shape)
        return out.tobytes()
