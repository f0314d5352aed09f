"""Records a program receives from the API."""

from __future__ import annotations

from dataclasses import dataclass, field

NOMINAL = ('COMPLETED', 'PREDICATE_SATISFIED')


@dataclass
class Execution:
    """One bounded execution. `ok` is True for a nominal event (COMPLETED,
    PREDICATE_SATISFIED); `event` is the event's name; `trace` has one dict per tick."""

    skill: str
    arm: str
    event: str
    detail: str
    reasons: list[str] = field(default_factory=list)
    trace: list[dict] = field(default_factory=list)
    holding: bool | None = None  # close_gripper: something is between the fingers
    handled: bool = False  # a handler absorbed the event

    @property
    def ok(self) -> bool:
        return self.event in NOMINAL

    def __repr__(self) -> str:
        extra = '' if self.holding is None else f', holding={self.holding}'
        return (
            f'Execution({self.skill}, arm={self.arm!r}, event={self.event}, '
            f'detail={self.detail!r}, ticks={len(self.trace)}{extra})'
        )


@dataclass(frozen=True)
class ArmView:
    joints: list[float]
    gripper: float
    tcp: list[float]  # x, y, z (m, world)
    tcp_quat: list[float]  # w, x, y, z
    grip_force: float


@dataclass(frozen=True)
class StateView:
    """The robot's measured state: `left`, `right` (ArmView), `step`, `time` (s)."""

    left: ArmView
    right: ArmView
    step: int
    time: float


@dataclass(frozen=True)
class Verdict:
    """The verifier's answer to a claim: `yes` and one `sentence` of reason. `answered` is
    False when no verifier could be asked (then `yes` is False). True in an `if` when yes."""

    yes: bool
    sentence: str
    answered: bool = True

    def __bool__(self) -> bool:
        return self.yes


@dataclass
class SceneMeasure:
    """The scene measured again: every object located so far (LocatedObject, by id, at its
    new position) and which object each arm holds ({'left': id or None, 'right': ...})."""

    objects: list
    held: dict[str, str | None]
    measured: bool = True

    def __iter__(self):
        # `objects, held = scene()` keeps working.
        return iter((self.objects, self.held))
