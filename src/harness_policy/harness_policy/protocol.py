"""The wire format of openpi policy servers: msgpack with numpy arrays and scalars as maps, and
the `Policy` a server serves.

One message is one msgpack value (an observation, a reply, the server's metadata: maps with
string keys; msgpack's decoder refuses other keys, here and at openpi's end). numpy values
travel as maps with bytes keys, as openpi's `msgpack_numpy` writes them, so an openpi client or
server reads ours and we read theirs:

  array   {b'__ndarray__': True, b'data': <raw bytes, C order>, b'dtype': dtype.str,
           b'shape': [d0, d1, ...]}
  scalar  {b'__npgeneric__': True, b'data': <the Python value>, b'dtype': dtype.str}

Tuples go as lists (msgpack has no tuple) and come back as lists. Every numpy scalar, float64
included, goes as a scalar map and comes back with its dtype (openpi's packer sends float64 as a
plain float; both forms decode here).

Decoded arrays are READ-ONLY views onto the bytes msgpack decoded (no further copy: a camera
frame is megabytes and most policies only read it; openpi's own decoder does the same);
`np.array(a)` gives a writable copy.

Decoding trusts nothing: anything that is not msgpack, an unknown or object/void/complex dtype,
a shape that is not a list of sizes, data whose length is not shape x itemsize, an extension
type, raises `ProtocolError` saying what was wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol, runtime_checkable

import msgpack
import numpy as np

_NDARRAY = b'__ndarray__'
_NPGENERIC = b'__npgeneric__'
_DATA = b'data'
_DTYPE = b'dtype'
_SHAPE = b'shape'

# object (pickles, pointers), void (structured, raw) and complex: what openpi refuses to send.
_REFUSED_KINDS = {'O': 'object', 'V': 'void/structured', 'c': 'complex'}
# The form dtype.str takes ('<f4', '|u1', '<U3', '<M8[ns]'); anything else (names, aliases,
# structured specs) is not something a numpy packer writes.
_DTYPE_STR = re.compile(r'[<>|=]?[A-Za-z]\d{0,10}(\[\w{1,10}\])?')
_MAX_NDIM = 32  # numpy 1.x's limit, which openpi clients run
# Python values a numpy scalar map may carry.
_SCALAR_DATA = (bool, int, float, str, bytes)


class ProtocolError(ValueError):
    """A value that cannot be encoded, or a message that is not a valid one (says what)."""


@runtime_checkable
class Policy(Protocol):
    """What a policy server serves. A server makes one policy per connection, so an instance
    may keep state across the calls of its connection (a chunk queue, a history, a counter);
    different connections run in different threads, each with its own instance.

    `infer(obs)` takes the observation dict (see `observation`) and returns the reply dict (at
    least `actions`). A policy may also have `reset(self) -> None` (openpi's `BasePolicy`
    interface: forget the episode's state), called by whoever holds the policy in-process; the
    server never calls it, since each connection starts with a new instance. A policy with a
    `close(self) -> None` has it called when its connection ends (a run's thread, a GPU context).
    """

    def infer(self, obs: dict) -> dict: ...


def _dtype_name(dtype: np.dtype) -> str:
    return _REFUSED_KINDS.get(dtype.kind, '')


def _raw(array: np.ndarray) -> bytes | memoryview:
    """The array's bytes in C order, for msgpack's bin."""
    # A view of a contiguous array, not tobytes(): msgpack copies it into its buffer anyway,
    # and the extra copy of a frame into fresh memory made encoding a 3 MB observation 25
    # times slower (5 ms instead of 0.2 ms). Datetimes export no buffer; empty arrays and
    # strided ones take the copy.
    if array.flags.c_contiguous and array.size and array.dtype.kind not in 'Mm':
        return memoryview(array).cast('B')
    return array.tobytes()


def _encode(obj: object) -> object:
    """msgpack's `default`: what it cannot write by itself (under strict types)."""
    if isinstance(obj, np.ndarray | np.generic):
        refused = _dtype_name(obj.dtype)
        if refused:
            raise ProtocolError(f'cannot send a numpy value of {refused} dtype {obj.dtype}')
        if isinstance(obj, np.ndarray):
            return {
                _NDARRAY: True,
                _DATA: _raw(obj),
                _DTYPE: obj.dtype.str,
                _SHAPE: list(obj.shape),
            }
        item = obj.item()
        if not isinstance(item, _SCALAR_DATA):
            raise ProtocolError(f'cannot send a numpy scalar of dtype {obj.dtype}')
        return {_NPGENERIC: True, _DATA: item, _DTYPE: obj.dtype.str}
    # Strict types send subclasses here (so that np.float64, a float subclass, keeps its
    # dtype); everything else that is a builtin container or value goes as its base type.
    if isinstance(obj, tuple | list):
        return list(obj)
    if isinstance(obj, dict):
        return dict(obj)
    for base in (bool, int, float, str, bytes):
        if isinstance(obj, base):
            return base(obj)
    raise ProtocolError(f'cannot send a value of type {type(obj).__name__}')


def packb(obj: object) -> bytes:
    """One message: `obj` (dicts, lists, tuples, str, bytes, numbers, None, numpy arrays and
    scalars) as msgpack. ProtocolError if something in it cannot be sent."""
    try:
        return msgpack.packb(obj, default=_encode, strict_types=True)
    except ProtocolError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f'cannot encode the message: {exc}') from exc


class Encoder:
    """`packb` into one buffer kept from message to message. A client sending megabyte
    observations so saves two fresh frames a request (msgpack's growing buffer and the bytes
    copied out of it), which glibc maps fresh from the kernel each time: the page faults made a
    3 MB request 2-3 times slower. Not thread-safe: one per connection.

        with encoder.packed(obs) as frame:  # a memoryview, valid inside the block
            ws.send(frame)
    """

    def __init__(self) -> None:
        self._packer = _packer()

    @contextmanager
    def packed(self, obj: object) -> Iterator[memoryview]:
        try:
            self._packer.reset()
            self._packer.pack(obj)
        except ProtocolError:
            raise
        except (TypeError, ValueError, OverflowError) as exc:
            raise ProtocolError(f'cannot encode the message: {exc}') from exc
        view = self._packer.getbuffer()
        try:
            yield view
        finally:
            try:
                view.release()
            except BufferError:
                # Something kept a view of the frame: the packer cannot be reused under it.
                self._packer = _packer()


def _packer() -> msgpack.Packer:
    return msgpack.Packer(default=_encode, strict_types=True, autoreset=False)


def _dtype_of(obj: dict, what: str) -> np.dtype:
    text = obj.get(_DTYPE)
    if isinstance(text, bytes):
        text = text.decode('ascii', 'replace')
    if not isinstance(text, str) or not _DTYPE_STR.fullmatch(text):
        raise ProtocolError(f'{what} has a bad dtype {text!r}')
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f'{what} has an unknown dtype {text!r}') from exc
    refused = _dtype_name(dtype)
    if refused:
        raise ProtocolError(f'{what} has {refused} dtype {text!r}, which is not allowed')
    if dtype.itemsize == 0:
        raise ProtocolError(f'{what} has dtype {text!r} without an item size')
    return dtype


def _array(obj: dict) -> np.ndarray:
    dtype = _dtype_of(obj, 'an array')
    shape, data = obj.get(_SHAPE), obj.get(_DATA)
    if not isinstance(shape, list | tuple) or len(shape) > _MAX_NDIM:
        raise ProtocolError(f'an array has a bad shape {shape!r:.80}')
    # bool is an int; a size must be a real non-negative int.
    if not all(type(d) is int and d >= 0 for d in shape):
        raise ProtocolError(f'an array has a bad shape {shape!r:.80}')
    if not isinstance(data, bytes):
        raise ProtocolError(f'an array has data of type {type(data).__name__}, not bytes')
    # Python ints: a product of absurd sizes does not overflow, it just does not match.
    size = dtype.itemsize
    for d in shape:
        size *= d
    if size != len(data):
        raise ProtocolError(
            f'an array of shape {tuple(shape)!r:.80} and dtype {dtype.str} needs {size} bytes, '
            f'got {len(data)}'
        )
    try:
        return np.ndarray(shape=tuple(shape), dtype=dtype, buffer=data)
    except (TypeError, ValueError) as exc:  # e.g. sizes numpy cannot index, when data is empty
        raise ProtocolError(f'an array of shape {tuple(shape)!r:.80} is not valid: {exc}') from exc


def _scalar(obj: dict) -> np.generic:
    dtype = _dtype_of(obj, 'a scalar')
    data = obj.get(_DATA)
    if not isinstance(data, _SCALAR_DATA):
        raise ProtocolError(f'a scalar of dtype {dtype.str} has data of type {type(data).__name__}')
    try:
        # Through an array, so that a datetime keeps its unit and an int that does not fit
        # the dtype is refused, not wrapped.
        value = np.array(data, dtype=dtype)[()]
    except (TypeError, ValueError, OverflowError) as exc:
        raise ProtocolError(f'a scalar of dtype {dtype.str} cannot hold {data!r:.80}') from exc
    if not isinstance(value, np.generic):
        raise ProtocolError(f'a scalar of dtype {dtype.str} cannot hold {data!r:.80}')
    return value


def _decode(obj: dict) -> object:
    """msgpack's `object_hook`: every map, innermost first."""
    if _NDARRAY in obj:
        return _array(obj)
    if _NPGENERIC in obj:
        return _scalar(obj)
    return obj


def _refuse_ext(code: int, data: bytes) -> object:
    raise ProtocolError(f'msgpack extension type {code} is not part of the protocol')


def unpackb(data: bytes) -> object:
    """The value of one message; numpy maps become arrays (read-only views) and scalars.
    ProtocolError says what is wrong with a message that is not a valid one."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ProtocolError(f'a message must be bytes, got {type(data).__name__}')
    try:
        return msgpack.unpackb(
            data, object_hook=_decode, ext_hook=_refuse_ext, timestamp=0, raw=False
        )
    except ProtocolError:
        raise
    except msgpack.ExtraData as exc:
        raise ProtocolError('the message holds bytes after its msgpack value') from exc
    except msgpack.StackError as exc:
        raise ProtocolError('the message nests too deeply') from exc
    except UnicodeDecodeError as exc:
        raise ProtocolError(f'the message holds a string that is not UTF-8: {exc}') from exc
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        # (msgpack's words for a byte no value starts with are none: its kind says it)
        why = str(exc) or type(exc).__name__
        raise ProtocolError(f'the message is not valid msgpack: {why}') from exc
