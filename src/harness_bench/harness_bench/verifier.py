"""The tiered verifier: what a task's goal, or an action's intended effect, looks like to
measurements, judged without the agent's words.

A verdict comes from tiers (ARCHITECTURE.md, section 12):
  1 physical measurement: gripper opening and finger force, TCP height (the robot's sensors);
  2 deterministic perception at rest: positions and colours of objects the verifier's own
    perception found in fresh camera views;
  3 a VLM judge (counts only beside a tier-2 verdict);
  4 ground truth (in simulation the bench's outcome check; on hardware an owner's label).
Each tier says satisfied, violated or nothing (it cannot tell); the verdict is the tiers'
common answer and the lowest tier that gave it; tiers that disagree make it `ambiguous`, and
views older than the last motion make it `stale`. A claim is data (one dataclass per relation),
so a task states its goal as a tuple of claims (`Task.goal`) and a skill's effect is built from
the same claims (the API table's `effect_claims`). Pure: no ROS, no simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from harness_types.robot_state import CONTACT_FORCE_N, RobotState
from harness_types.scene import LocatedObject

SATISFIED, VIOLATED, AMBIGUOUS, STALE = 'satisfied', 'violated', 'ambiguous', 'stale'
VERDICTS = (SATISFIED, VIOLATED, AMBIGUOUS, STALE)
TIERS = {1: 'physical', 2: 'perception', 3: 'vlm', 4: 'ground truth'}
CLOSED_BELOW = 0.04  # an opening below this with force is the fingers squeezing each other
# Joint speeds below this: no arm is in mid-motion (a motion ends within its tolerance with
# its joints still turning at up to ~0.25 rad/s; that moves no object).
AT_REST_RAD_S = 0.5
RESTING_M = 0.015  # how far a resting object's bottom may be from the surface under it
MEASURE_M = 0.005  # perception's error on a position, which footprint tests allow for


@dataclass(frozen=True)
class Evidence:
    """What the verifier measured itself: the robot now, the objects its own perception found
    in views of tick `observed_step` (with `find(query)` to match them by colour and shape
    words), the same of the moment before the action (`before`, for claims about change), the
    tick the last motion ended, and the table's height."""

    robot: RobotState
    objects: list[LocatedObject]
    find: Callable[[str], list[LocatedObject]]
    observed_step: int
    last_motion_step: int
    table_top_z: float
    before: Evidence | None = None
    home_tcp: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def at_rest(self) -> bool:
        return all(
            float(np.abs(a.velocities).max(initial=0.0)) < AT_REST_RAD_S
            for a in self.robot.arms.values()
        )

    @property
    def stale(self) -> bool:
        return self.observed_step < self.last_motion_step


@dataclass(frozen=True)
class Judgement:
    """One tier's answer: `verdict` satisfied or violated, with the measurements as a sentence."""

    tier: int
    verdict: str
    evidence: str


@dataclass(frozen=True)
class Verdict:
    """The verifier's answer on one claim set: `verdict` (VERDICTS), the `tier` it rests on (0
    when none could judge), `evidence` (one line per tier counted) and every tier's
    `judgements`, counted or not."""

    verdict: str
    tier: int
    evidence: list[str]
    judgements: tuple[Judgement, ...] = ()

    def as_dict(self) -> dict:
        return {'verdict': self.verdict, 'tier': self.tier, 'evidence': list(self.evidence)}


# Claims -------------------------------------------------------------------------------------
# Each claim's `judge` returns (verdict, sentence), or None when its tier cannot tell. A claim
# with `necessary` only ever says violated (a released gripper does not show where the object
# went, but a closed one shows it was not put down).


def _one(evidence: Evidence, query: str) -> LocatedObject | None:
    found = evidence.find(query)
    return found[0] if found else None


def _bottom(o: LocatedObject) -> float:
    return float(o.position[2] - o.size[2] / 2.0)


def _holding(arm, table_z: float) -> tuple[bool, str]:
    held = arm.grip_force > CONTACT_FORCE_N and arm.gripper > CLOSED_BELOW
    return held, (
        f'{arm.name} gripper {arm.gripper:.2f} open, {arm.grip_force:.1f} N on its fingers, '
        f'TCP {(arm.tcp_position[2] - table_z) * 100:.1f} cm above the table'
    )


@dataclass(frozen=True)
class Holding:
    """Tier 1: a gripper (`arm`, '' = either) holds something with force, its TCP at least
    `tcp_above` m over the table."""

    arm: str = ''
    tcp_above: float = 0.0
    tier: int = 1
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        arms = [e.robot.arm(self.arm)] if self.arm else list(e.robot.arms.values())
        notes = []
        for a in arms:
            held, note = _holding(a, e.table_top_z)
            notes.append(note)
            if held and a.tcp_position[2] - e.table_top_z >= self.tcp_above:
                return SATISFIED, note
        return VIOLATED, '; '.join(notes)


@dataclass(frozen=True)
class Released:
    """Tier 1, necessary: a gripper (`arm`, '' = both) holds nothing (no force on its
    fingers)."""

    arm: str = ''
    tier: int = 1
    necessary: bool = True

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        arms = [e.robot.arm(self.arm)] if self.arm else list(e.robot.arms.values())
        for a in arms:
            held, note = _holding(a, e.table_top_z)
            if held:
                return VIOLATED, note
        return SATISFIED, ', '.join(f'{a.name} gripper {a.gripper:.2f} open, no grip' for a in arms)


@dataclass(frozen=True)
class AtHome:
    """Tier 1: every arm's TCP within `tolerance` m of its pose at the episode's start."""

    tolerance: float = 0.03
    tier: int = 1
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        if not e.home_tcp:
            return None
        off = {
            n: float(np.linalg.norm(a.tcp_position - e.home_tcp[n]))
            for n, a in e.robot.arms.items()
            if n in e.home_tcp
        }
        text = ', '.join(f'{n} TCP {d * 100:.1f} cm from home' for n, d in off.items())
        return (SATISFIED if max(off.values()) <= self.tolerance else VIOLATED), text


@dataclass(frozen=True)
class TcpAt:
    """Tier 1: `arm`'s TCP within `tolerance` m of `position`."""

    arm: str
    position: tuple[float, float, float]
    tolerance: float = 0.01
    tier: int = 1
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        d = float(np.linalg.norm(e.robot.arm(self.arm).tcp_position - np.asarray(self.position)))
        return (SATISFIED if d <= self.tolerance else VIOLATED), (
            f'{self.arm} TCP {d * 100:.1f} cm from the target'
        )


@dataclass(frozen=True)
class Raised:
    """Tier 2: an object `query` names (any of them) has its bottom at least `above` m over
    the table."""

    query: str
    above: float
    tier: int = 2
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        found = e.find(self.query)
        if not found:
            return None  # out of view (or hidden by the hand): perception cannot tell
        o = max(found, key=_bottom)
        h = _bottom(o) - e.table_top_z
        return (SATISFIED if h >= self.above - RESTING_M / 3 else VIOLATED), (
            f'the {o.label} ({o.id}) has its bottom {h * 100:.1f} cm above the table'
        )


def _footprint_offset(o: LocatedObject, base: LocatedObject) -> tuple[float, float]:
    """How far o's centre is from base's centre (xy) and the radius that counts as over it:
    half the base's narrower side (or the object's: a base partly hidden under it measures
    smaller than it is), plus perception's error."""
    offset = float(np.linalg.norm(o.position[:2] - base.position[:2]))
    half = max(min(base.size[0], base.size[1]), min(o.size[0], o.size[1])) / 2.0
    return offset, float(half) + MEASURE_M


@dataclass(frozen=True)
class Inside:
    """Tier 2: every object `query` names rests within the footprint of `container` (a bowl,
    a bin, a zone drawn on the table), not above its rim."""

    query: str
    container: str
    tier: int = 2
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        found, c = e.find(self.query), _one(e, self.container)
        if not found or c is None:
            return None
        rim = float(c.position[2] + c.size[2] / 2.0)
        notes = []
        for o in found:
            offset, radius = _footprint_offset(o, c)
            inside = offset <= radius and _bottom(o) <= rim + RESTING_M
            note = (
                f'the {o.label} ({o.id}) is {offset * 100:.1f} cm from the centre of the '
                f'{c.label} (inside: under {radius * 100:.1f} cm), its bottom '
                f'{(_bottom(o) - e.table_top_z) * 100:.1f} cm above the table'
            )
            if not inside:
                return VIOLATED, note
            notes.append(note)
        return SATISFIED, '; '.join(notes)


@dataclass(frozen=True)
class On:
    """Tier 2: the object `query` rests on top of `base`: over its footprint, its bottom
    within RESTING_M of the base's top."""

    query: str
    base: str
    tier: int = 2
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        o, b = _one(e, self.query), _one(e, self.base)
        if o is None or b is None:
            return None
        offset, radius = _footprint_offset(o, b)
        gap = _bottom(o) - float(b.top)
        on = offset <= radius and abs(gap) <= RESTING_M
        return (SATISFIED if on else VIOLATED), (
            f'the {o.label} is {offset * 100:.1f} cm off the centre of the {b.label}, '
            f'{gap * 100:+.1f} cm from its top'
        )


@dataclass(frozen=True)
class Apart:
    """Tier 2: the centres of `query` and `other` lie at least `distance` m apart (xy): a
    drawer's handle pulled away from its cabinet."""

    query: str
    other: str
    distance: float
    tier: int = 2
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        o, b = _one(e, self.query), _one(e, self.other)
        if o is None or b is None:
            return None
        d = float(np.linalg.norm(o.position[:2] - b.position[:2]))
        return (SATISFIED if d >= self.distance else VIOLATED), (
            f'the {o.label} is {d * 100:.1f} cm from the {b.label} (at least '
            f'{self.distance * 100:.0f} cm asked)'
        )


@dataclass(frozen=True)
class Near:
    """Tier 2: the object `query` has its centre within `tolerance` m (xy) of `position`."""

    query: str
    position: tuple[float, float, float]
    tolerance: float = 0.03
    tier: int = 2
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        o = _one(e, self.query)
        if o is None:
            return None
        d = float(np.linalg.norm(o.position[:2] - np.asarray(self.position)[:2]))
        return (SATISFIED if d <= self.tolerance else VIOLATED), (
            f'the {o.label} is {d * 100:.1f} cm from the target'
        )


@dataclass(frozen=True)
class Moved:
    """Tier 2: the object `query` moved at least `fraction` of `distance` m along
    `direction` (xy) since the view before the action."""

    query: str
    direction: tuple[float, float]
    distance: float
    fraction: float = 0.5
    tier: int = 2
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        if e.before is None:
            return None
        now, then = _one(e, self.query), _one(e.before, self.query)
        if now is None or then is None:
            return None
        d = np.asarray(self.direction, dtype=float)
        d = d / (np.linalg.norm(d) or 1.0)
        moved = float((now.position[:2] - then.position[:2]) @ d)
        return (SATISFIED if moved >= self.fraction * self.distance else VIOLATED), (
            f'the {now.label} moved {moved * 100:.1f} cm along the push '
            f'(asked {self.distance * 100:.1f} cm)'
        )


@dataclass(frozen=True)
class Turned:
    """Tier 2: where the object `query` stood before the action, an object `now` names stands
    (a button that latched changes colour) and `query` no longer does."""

    query: str
    now: str
    tolerance: float = 0.03
    tier: int = 2
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        if e.before is None:
            return None
        then = _one(e.before, self.query)
        if then is None:
            return None

        def at_spot(query: str) -> LocatedObject | None:
            near = [
                o
                for o in e.find(query)
                if np.linalg.norm(o.position[:2] - then.position[:2]) <= self.tolerance
            ]
            return near[0] if near else None

        turned, still = at_spot(self.now), at_spot(self.query)
        if turned is not None and still is None:
            return SATISFIED, f'a {turned.label} stands where the {then.label} stood'
        if still is not None:
            return VIOLATED, f'the {still.label} is still there'
        return None


@dataclass(frozen=True)
class Absent:
    """Tier 2: no object `query` names is in view (e.g. no unlatched red button left)."""

    query: str
    tier: int = 2
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        found = e.find(self.query)
        if found:
            return (
                VIOLATED,
                f'a {found[0].label} is in view at {np.round(found[0].position, 3).tolist()}',
            )
        return SATISFIED, f'no {self.query} in view'


@dataclass(frozen=True)
class Present:
    """Tier 2: an object `query` names is in view."""

    query: str
    tier: int = 2
    necessary: bool = False

    def judge(self, e: Evidence) -> tuple[str, str] | None:
        found = e.find(self.query)
        if found:
            return SATISFIED, f'a {found[0].label} is in view'
        return VIOLATED, f'no {self.query} in view'


Claim = (
    Holding
    | Released
    | AtHome
    | TcpAt
    | Raised
    | Inside
    | On
    | Near
    | Moved
    | Turned
    | Absent
    | Present
)


# Judging ------------------------------------------------------------------------------------


def judge_tier(claims: Sequence[Claim], tier: int, e: Evidence) -> Judgement | None:
    """The tier's answer on all its claims: violated when any claim is, satisfied when every
    claim that can be judged is (and one that is not merely necessary is among them)."""
    mine = [c for c in claims if c.tier == tier]
    if not mine or (tier == 2 and not e.at_rest):
        return None
    notes, decisive = [], False
    for c in mine:
        answer = c.judge(e)
        if answer is None:
            if not c.necessary:
                return None  # the tier cannot tell its main claim
            continue
        verdict, note = answer
        if verdict == VIOLATED:
            return Judgement(tier, VIOLATED, note)
        notes.append(note)
        decisive = decisive or not c.necessary
    if not decisive:
        return None
    return Judgement(tier, SATISFIED, '; '.join(notes))


def combine(judgements: Sequence[Judgement], stale: bool = False, tier3: bool = False) -> Verdict:
    """The tiers' common verdict. A tier-3 answer (a VLM's) counts only for a task whose
    tier 3 has a report card (`tier3`) and only beside a tier-2 one; otherwise it is kept in
    `judgements` (the report card that earns the tier reads it) but not counted."""
    if stale:
        return Verdict(STALE, 0, ['the views are older than the last motion: recheck it'])
    counted = [
        j for j in judgements if j.tier != 3 or (tier3 and any(k.tier == 2 for k in judgements))
    ]
    counted.sort(key=lambda j: j.tier)
    lines = [f'tier {j.tier} ({TIERS[j.tier]}): {j.verdict}: {j.evidence}' for j in counted]
    if not counted:
        return Verdict(AMBIGUOUS, 0, ['no tier could judge it: recheck it'], tuple(judgements))
    answers = {j.verdict for j in counted}
    if len(answers) > 1:
        return Verdict(AMBIGUOUS, counted[0].tier, lines, tuple(judgements))
    return Verdict(answers.pop(), counted[0].tier, lines, tuple(judgements))


def verify(
    claims: Sequence[Claim], e: Evidence, extra: Sequence[Judgement] = (), tier3: bool = False
) -> Verdict:
    """Judge `claims` with tiers 1 and 2 (and `extra` judgements, e.g. a VLM's at tier 3,
    counted as `combine` says)."""
    if e.stale:
        return combine([], stale=True)
    found = [j for t in (1, 2) if (j := judge_tier(claims, t, e)) is not None]
    return combine([*found, *extra], tier3=tier3)
