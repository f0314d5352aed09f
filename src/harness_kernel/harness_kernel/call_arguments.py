"""A call's arguments as the kernel takes them (trusted side): each checked and made plain by
its kind in the API table, whatever the program sent. An object from locate() is rebuilt from
its measured numbers (its text fields clipped), an arm is one of the arms, numbers are
floats, text is text; a point passes to its handler, which checks it (a contact skill turns a
bad one into its SKILL_ERROR). A wrong value raises TypeError or ValueError with the call's
name."""

from __future__ import annotations

import collections
import itertools
import math
import re
from typing import Any

import numpy as np
from harness_types.robot_state import ARMS
from harness_types.scene import LocatedObject

from harness_kernel.api_table import ApiName
from harness_kernel.bounds import program_text

# Numbers whose 0 means "the skill's default" and that no negative value makes sense for (the
# skills took one as the default without a word).
NOT_NEGATIVE = frozenset(('speed', 'max_seconds'))


def checked(entry: ApiName, arguments: dict) -> dict:
    """`arguments` (bound to the stub, defaults applied) checked by kind."""
    out = {}
    for name, value in arguments.items():
        argument = entry.argument(name)
        if value is None and argument.optional:
            out[name] = None
        else:
            out[name] = _checked(argument.kind, value, entry.where(name))
            if argument.kind == 'number':
                not_negative(name, out[name], entry.where(name))
    return out


def not_negative(name: str, number: float, where: str) -> float:
    """`number`, or ValueError when argument `name` is one of NOT_NEGATIVE and it is below 0."""
    if name in NOT_NEGATIVE and number < 0:
        raise ValueError(f'{where}: must be 0 (the default) or more, not {number}')
    return number


def _checked(kind: str, value: Any, where: str) -> Any:
    if kind == 'object':
        return located(value, where)
    if kind == 'target':  # an object, or a point its handler checks
        return located(value, where) if isinstance(value, LocatedObject) else value
    if kind == 'arm':
        if value not in ('', *ARMS):
            raise ValueError(f"{where}: arm must be 'left', 'right' or '', got {value!r}")
        return value
    if kind == 'number':
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f'{where}: must be a number, not {_shown(value)}') from None
        return finite(number, where)
    if kind == 'vector2':
        try:
            vector = np.asarray(value, dtype=float)
        except (TypeError, ValueError, OverflowError):
            vector = np.zeros(0)
        if vector.shape not in ((2,), (3,)):
            raise ValueError(f'{where}: must be [dx, dy]')
        return vector
    if kind == 'prose':  # (the kernel cleans it where it shows it: program_text)
        return str(value)
    if kind == 'text':
        text = str(value)
        # (it goes on in a ROS string: a NUL would end it, a lone surrogate cannot be sent)
        if UNSENDABLE.search(text):
            raise ValueError(
                f'{where}: text without NUL characters or lone surrogates, not {_shown(value)}'
            )
        return text
    if kind == 'region':
        try:
            corners = np.asarray(value, dtype=float)
        except (TypeError, ValueError, OverflowError):
            corners = np.zeros(0)
        if corners.shape != (2, 3):
            raise ValueError(
                f'{where}: must be ([xmin, ymin, zmin], [xmax, ymax, zmax]), not {_shown(value)}'
            )
        return value  # the skill checks its numbers (finite, min below max)
    if kind == 'names':  # a name alone would be taken letter by letter
        if not isinstance(value, list | tuple) or not all(isinstance(n, str) for n in value):
            raise ValueError(
                f"{where}: must be a list of names, e.g. ['cam_head'], not {_shown(value)}"
            )
        # (each name is served for each of its places: a camera named 300 times was rendered
        # 300 times a tick, and held in memory as often)
        if len(value) > MAX_NAMES:  # (first: the count below is as long as the list)
            raise ValueError(f'{where}: {len(value)} names: at most {MAX_NAMES} distinct names')
        twice = sorted(n for n, k in collections.Counter(value).items() if k > 1)
        if twice:
            raise ValueError(
                f'{where}: names {_shown(twice)} more than once: at most {MAX_NAMES} distinct names'
            )
        if not all(n.isprintable() for n in value):
            raise ValueError(f'{where}: a name is printable text, not {_shown(value)}')
        return list(value)
    return value  # points, images, rows: the handler checks them (a bad one is its SKILL_ERROR)


MAX_NAMES = 16  # names in one list argument (a station has a few cameras)
UNSENDABLE = re.compile('[\x00\ud800-\udfff]')  # what no ROS string can hold


def finite(number: float, where: str) -> float:
    """`number`, or ValueError when it is inf or nan: no bound, speed or share means either."""
    if not math.isfinite(number):
        raise ValueError(f'{where}: must be a finite number, not {number!r}')
    return number


def located(obj: Any, where: str) -> LocatedObject:
    """An object from locate() as the kernel uses it: its numbers checked, its text clipped."""
    if not isinstance(obj, LocatedObject):
        raise TypeError(f'{where} needs an object from locate()')
    try:
        position = np.asarray(obj.position, dtype=float)
        size = np.asarray(obj.size, dtype=float)
        top = float(obj.top)
        cameras = [program_text(c, 100) for c in itertools.islice(obj.cameras, 16)]
    except (TypeError, ValueError, OverflowError):
        position = size = np.zeros(0)
    if position.shape != (3,) or size.shape != (3,) or not np.all(np.isfinite(position)):
        raise ValueError(f'{where}: the object has no valid position, size, top and cameras')
    # (an id or label is one line of the model's report: a line break in one wrote lines of
    # the report's own there)
    ident, label = (_one_line(program_text(t, n)) for t, n in ((obj.id, 100), (obj.label, 200)))
    return LocatedObject(ident, label, position, size, top, cameras)


def _one_line(text: str) -> str:
    """`text` on one line of printable characters (any other becomes '?')."""
    return ''.join(c if c.isprintable() else '?' for c in ' '.join(text.split()))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f'{text[:57]}...'
