"""The one channel between the kernel node (trusted) and the program process (untrusted): an
inherited Unix socket pair carrying frames of JSON with numpy arrays alongside.

A frame is `u32 header length | header (JSON) | u32 buffer count | (u64 length | bytes)*`.
Arrays in the header are `{"__nd__": i, "dtype": ..., "shape": [...]}` pointing at buffer i;
dataclasses of the allowed types are `{"__dc__": name, "fields": {...}}`. Decoding builds only
plain JSON values, arrays of the allowed number types and the allowed dataclasses, and checks
every size, so a hostile sender can make the reader raise ChannelError and nothing else.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import struct
from typing import Any

import numpy as np

MAX_FRAME = 64 * 1024 * 1024
MAX_HEADER = 4 * 1024 * 1024
MAX_BUFFERS = 256
INLINE = 64  # arrays of at most this many numbers travel inside the header
DTYPES = ('uint8', 'int32', 'int64', 'float32', 'float64', 'bool')


_PLAIN = frozenset((type(None), bool, int, float, str))
_DTYPE_NAMES = {np.dtype(name): name for name in DTYPES}


class ChannelError(Exception):
    """The other side sent something that is not a frame, or went away."""


class ChannelClosedError(ChannelError):
    """The other side closed the channel (its process ended)."""


class ChannelStalledError(ChannelError):
    """The other side did not read a frame in time."""


class Codec:
    """Encodes values for the channel; decodes only the dataclasses in `types`."""

    def __init__(self, types: tuple[type, ...] = ()) -> None:
        self.types = {t.__name__: t for t in types}
        # Field names by dataclass: a robot state goes each way every tick of a guarded
        # execution, and dataclasses.fields() per value was a third of its encoding.
        self._fields: dict[type, tuple[str, ...]] = {
            t: tuple(f.name for f in dataclasses.fields(t)) for t in types
        }

    def encode(self, value: Any) -> bytes:
        buffers: list[bytes] = []
        header = json.dumps(self._plain(value, buffers), allow_nan=True).encode()
        if len(header) > MAX_HEADER:
            raise ChannelError(f'a message of {len(header)} bytes is over the {MAX_HEADER} limit')
        parts = [struct.pack('<I', len(header)), header, struct.pack('<I', len(buffers))]
        for b in buffers:
            parts += [struct.pack('<Q', len(b)), b]
        return b''.join(parts)

    def _plain(self, value: Any, buffers: list[bytes]) -> Any:
        # Exact types first, the dataclasses known by their fields: isinstance chains were most
        # of a robot state's encoding.
        kind = type(value)
        if kind in _PLAIN:
            return value
        if kind is list or kind is tuple:
            return [self._plain(v, buffers) for v in value]
        if kind is np.ndarray:
            return self._array(value, buffers)
        names = self._fields.get(kind)
        if names is not None:
            fields = {name: self._plain(getattr(value, name), buffers) for name in names}
            return {'__dc__': kind.__name__, 'fields': fields}
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray):
            return self._array(value, buffers)
        if isinstance(value, dict):
            return {
                '__map__': [
                    [self._plain(k, buffers), self._plain(v, buffers)] for k, v in value.items()
                ]
            }
        if isinstance(value, list | tuple | set | frozenset):
            return [self._plain(v, buffers) for v in value]
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            self._fields[kind] = tuple(f.name for f in dataclasses.fields(value))
            return self._plain(value, buffers)
        raise ChannelError(f'cannot send a {type(value).__name__} over the channel')

    @staticmethod
    def _array(value: np.ndarray, buffers: list[bytes]) -> dict:
        dtype = _DTYPE_NAMES.get(value.dtype)
        if dtype is None:
            value, dtype = value.astype(float), 'float64'
        if value.size <= INLINE:
            return {'__nd__': value.ravel().tolist(), 'dtype': dtype, 'shape': value.shape}
        buffers.append(np.ascontiguousarray(value).tobytes())
        return {'__nd__': len(buffers) - 1, 'dtype': dtype, 'shape': value.shape}

    def decode(self, frame: bytes) -> Any:
        try:
            (n,) = struct.unpack_from('<I', frame, 0)
            if n > MAX_HEADER:
                raise ChannelError('header too long')
            header = json.loads(frame[4 : 4 + n])
            offset = 4 + n
            (count,) = struct.unpack_from('<I', frame, offset)
            offset += 4
            if count > MAX_BUFFERS:
                raise ChannelError('too many buffers')
            buffers = []
            for _ in range(count):
                (size,) = struct.unpack_from('<Q', frame, offset)
                offset += 8
                if offset + size > len(frame):
                    raise ChannelError('buffer size out of range')
                buffers.append(frame[offset : offset + size])
                offset += size
            if offset != len(frame):
                raise ChannelError('trailing bytes')
            return self._value(header, buffers, 0)
        except ChannelError:
            raise
        except (
            ValueError,
            TypeError,
            KeyError,
            IndexError,
            OverflowError,
            AttributeError,
            struct.error,
            RecursionError,
        ) as exc:
            raise ChannelError(f'malformed frame: {type(exc).__name__}: {exc}') from None

    def _value(self, node: Any, buffers: list[bytes], depth: int) -> Any:
        if depth > 64:
            raise ChannelError('nested too deeply')
        if isinstance(node, list):
            return [self._value(v, buffers, depth + 1) for v in node]
        if not isinstance(node, dict):
            return node
        if '__nd__' in node:
            dtype = node['dtype']
            if dtype not in DTYPES:
                raise ChannelError(f'array type {dtype!r} is not allowed')
            shape = node['shape']
            if (
                type(shape) is not list
                or len(shape) > 4
                or not all(type(n) is int and n >= 0 for n in shape)
            ):
                raise ChannelError('bad array shape')
            where = node['__nd__']
            if isinstance(where, list):
                if len(where) > INLINE:
                    raise ChannelError('inline array too long')
                return np.array(where, dtype=dtype).reshape(shape)
            data = buffers[int(where)]
            return np.frombuffer(data, dtype=dtype).reshape(shape).copy()
        if '__map__' in node:
            out = {}
            for k, v in node['__map__']:
                key = self._value(k, buffers, depth + 1)
                if not isinstance(key, str | int | float | bool) and key is not None:
                    raise ChannelError('a map key must be a plain value')
                out[key] = self._value(v, buffers, depth + 1)
            return out
        if '__dc__' in node:
            cls = self.types.get(node['__dc__'])
            if cls is None:
                raise ChannelError(f'type {node["__dc__"]!r} is not allowed here')
            raw = node['fields']
            if not isinstance(raw, dict):
                raise ChannelError(f'the fields of a {cls.__name__} must be a map')
            unknown = set(raw) - set(self._fields[cls])
            if unknown:
                raise ChannelError(f'{cls.__name__} has no field {sorted(unknown)}')
            return cls(**{k: self._value(v, buffers, depth + 1) for k, v in raw.items()})
        raise ChannelError('an object must be an array, a map or an allowed type')


class Channel:
    """Frames over one connected stream socket."""

    def __init__(self, sock: socket.socket, codec: Codec) -> None:
        self.sock = sock
        self.codec = codec

    def fileno(self) -> int:
        return self.sock.fileno()

    def send(self, value: Any, timeout: float | None = None) -> None:
        """One frame; with a `timeout`, ChannelStalledError when the other side has not read
        it all by then (the channel is then broken: a frame may be cut)."""
        data = self.codec.encode(value)
        if len(data) > MAX_FRAME:
            raise ChannelError(f'a frame of {len(data)} bytes is over the {MAX_FRAME} limit')
        self.sock.settimeout(timeout)
        try:
            self.sock.sendall(struct.pack('<Q', len(data)) + data)
        except TimeoutError:
            raise ChannelStalledError(
                f'the other side did not read what was sent to it for {timeout:g} s'
            ) from None
        except OSError as exc:
            raise ChannelClosedError(f'the other side is gone: {exc}') from None
        finally:
            self.sock.settimeout(None)

    def recv(self, timeout: float | None = None) -> Any:
        self.sock.settimeout(timeout)
        try:
            (size,) = struct.unpack('<Q', self._exact(8))
            if size > MAX_FRAME:
                raise ChannelError(f'a frame of {size} bytes is over the {MAX_FRAME} limit')
            return self.codec.decode(self._exact(size))
        finally:
            self.sock.settimeout(None)

    def _exact(self, n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            try:
                chunk = self.sock.recv(min(n - got, 1 << 20))
            except TimeoutError:
                if got:
                    raise ChannelError('the other side stopped in the middle of a frame') from None
                raise
            except OSError as exc:
                raise ChannelClosedError(f'the other side is gone: {exc}') from None
            if not chunk:
                raise ChannelClosedError('the other side closed the channel')
            chunks.append(chunk)
            got += len(chunk)
        return b''.join(chunks)
