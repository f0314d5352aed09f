"""What the cameras found (located objects), the scene measured after a cell, and the verifier's
verdict on a claim."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class LocatedObject:
    """An object found by the cameras. `id` stays the same for the whole episode; `position`
    (m, world) is the centre of its top face in x, y (harness_perception.measure says how each
    shape is measured) and halfway between its top and bottom in z, `size` its extent (x, y,
    z), `top` the height of its top surface, `cameras` the cameras that saw it."""

    id: str
    label: str
    position: np.ndarray
    size: np.ndarray
    top: float
    cameras: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        p, s = np.round(self.position, 3).tolist(), np.round(self.size, 3).tolist()
        return (
            f'LocatedObject(id={self.id!r}, label={self.label!r}, position={p}, size={s}, '
            f'cameras={self.cameras})'
        )


@dataclass
class Grip:
    """Which arm holds which object (what pick and transfer return): `arm`, `object_id`, the
    object's `height` (m), the TCP orientation `quat` (w, x, y, z) of the grasp, the object's
    centre minus the TCP at the grasp (`offset`, m), and the `executions` it took."""

    arm: str
    object_id: str
    height: float
    quat: list[float]
    offset: np.ndarray
    executions: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f'Grip(arm={self.arm!r}, object={self.object_id!r}, steps={len(self.executions)})'


@dataclass
class SceneReport:
    """The scene measured again: every object located so far (by id, at its new position) and
    which object each arm holds ({'left': id or None, 'right': ...}). `measured` is False when
    nothing was located yet, and after a cell that ended the episode (nothing reads it then).
    `objects, held = scene()` unpacks it."""

    objects: list[LocatedObject] = field(default_factory=list)
    held: dict[str, str | None] = field(default_factory=lambda: {'left': None, 'right': None})
    measured: bool = False

    def __iter__(self):
        return iter((self.objects, self.held))


@dataclass(frozen=True)
class ClaimAnswer:
    """The verifier's answer to a claim: `yes` and one `sentence` of reason. `answered` is
    False when no verifier could be asked (then `yes` is False). True in an `if` when yes."""

    answered: bool
    yes: bool
    sentence: str

    def __bool__(self) -> bool:
        return self.yes
