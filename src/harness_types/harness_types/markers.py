"""What the harness shows in rviz on `harness/markers` (visualization_msgs/MarkerArray): the
objects a program located, the region an execution is bounded by, and where the shield
rejected a command. Pure records here; `convert.marker_array_msg` makes the message. Each
kind has its own namespace, so rviz can show or hide it, and a publisher replaces its own
markers by (namespace, id)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness_types.scene import LocatedObject

LOCATED = 'located'
REGIONS = 'regions'
SHIELD = 'shield_rejections'
FRAME = 'world'
REJECTION_LIFETIME_S = 5.0  # a rejection is an instant: shown for a while, then gone


@dataclass(frozen=True)
class Mark:
    """One marker: a box, a sphere or a text at `position` (m, in `frame`), `size` its extent
    (m), `rgba` 0..1; `lifetime_s` 0 = until replaced or deleted; `delete` removes the marker
    (namespace, id) instead."""

    namespace: str
    id: int
    shape: str  # 'box' | 'wire_box' | 'sphere' | 'text'
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    size: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rgba: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    text: str = ''
    lifetime_s: float = 0.0
    frame: str = FRAME
    delete: bool = False
    clear_namespace: bool = False  # remove every marker of `namespace` (before adding anew)


def _xyz(v) -> tuple[float, float, float]:
    a = np.asarray(v, dtype=float).reshape(3)
    return (float(a[0]), float(a[1]), float(a[2]))


def located_marks(objects: list[LocatedObject]) -> list[Mark]:
    """Each object's bounding box and its id above it; what locate() saw last replaces what
    it saw before."""
    marks = [Mark(LOCATED, 0, 'box', clear_namespace=True)]
    for k, o in enumerate(objects):
        top = _xyz(o.position)
        marks.append(
            Mark(LOCATED, 2 * k + 1, 'box', _xyz(o.position), _xyz(o.size), (0.1, 0.8, 0.3, 0.45))
        )
        marks.append(
            Mark(
                LOCATED,
                2 * k + 2,
                'text',
                (top[0], top[1], float(o.top) + 0.03),
                (0.0, 0.0, 0.025),
                (1.0, 1.0, 1.0, 1.0),
                text=o.id,
            )
        )
    return marks


def region_mark(execution_id: int, lo, hi, active: bool = True) -> Mark:
    """The box link6 must stay in during an execution; deleted when the execution ends."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if not active:
        return Mark(REGIONS, execution_id, 'wire_box', delete=True)
    return Mark(
        REGIONS, execution_id, 'wire_box', _xyz((lo + hi) / 2), _xyz(hi - lo), (0.2, 0.6, 1.0, 1.0)
    )


def rejection_marks(sequence: int, arm: str, position, reason: str) -> list[Mark]:
    """Where the rejected arm's TCP was when the shield refused its command, and why."""
    p = _xyz(position)
    return [
        Mark(
            SHIELD,
            2 * sequence,
            'sphere',
            p,
            (0.05, 0.05, 0.05),
            (1.0, 0.1, 0.1, 0.8),
            lifetime_s=REJECTION_LIFETIME_S,
        ),
        Mark(
            SHIELD,
            2 * sequence + 1,
            'text',
            (p[0], p[1], p[2] + 0.06),
            (0.0, 0.0, 0.02),
            (1.0, 0.3, 0.3, 1.0),
            text=f'{arm}: {reason}'[:120],
            lifetime_s=REJECTION_LIFETIME_S,
        ),
    ]
