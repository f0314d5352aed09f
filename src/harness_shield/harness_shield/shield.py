"""The shield: the checks on every joint command. It accepts or rejects; it never edits.

| check          | rejects                                                                  |
|----------------|--------------------------------------------------------------------------|
| shape, finite  | a command of the wrong length, or with NaN/inf                           |
| joint limits   | a target further past a limit than the joint already is (+ tolerance);   |
|                | a gripper open fraction outside [0, 1]                                   |
| joint jump     | an arm joint jumping more than the maximum from BOTH the last accepted   |
|                | command and the measured state                                           |
| lead           | an arm joint further ahead of the measured one than the maximum, and     |
|                | further ahead than the last accepted command was                         |
| workspace      | link6 further outside the workspace box than it already is               |
| Cartesian jump | link6 jumping more than the maximum from BOTH the last accepted          |
|                | command's and the measured pose                                          |
| table          | any link of an arm (fingers included) deeper into the table than it      |
|                | already is, past the tolerance                                           |
| arm collision  | the two arms (fingers included) deeper into each other than they already |
|                | are, past the tolerance                                                  |

Forward kinematics (`LinkFK`) and the collision geometry (`Clearance`) are injected, so this
module knows no robot. A rejected command never becomes the last accepted one; `reset()`
forgets the last accepted command.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# Maps a full command (or measured) vector to each arm's link6 world position, in arm order.
LinkFK = Callable[[np.ndarray], Sequence[np.ndarray]]


@dataclass(frozen=True)
class Contacts:
    """How deep (m, >= 0) the robot at some joint vector is in collision: each arm with the
    table (in arm order), and the arms with each other."""

    table: tuple[float, ...]
    arms: float


# Maps a full command (or measured) vector to its Contacts.
Clearance = Callable[[np.ndarray], Contacts]

# Floating-point slack for "further than already": FK of the same joints twice agrees far below it.
_SAME = 1e-9


def _all_finite(v: np.ndarray) -> bool:
    """Whether every entry of a float vector is finite. A finite sum proves it (a NaN or an inf
    makes the sum NaN or inf), in Python floats at a third of np.isfinite's cost and without
    numpy's overflow warning; a sum that overflows falls back to the entrywise test."""
    return math.isfinite(sum(v.tolist())) or bool(np.isfinite(v).all())


def _norm(v: np.ndarray) -> float:
    """Euclidean norm of a vector: what np.linalg.norm computes (sqrt of the dot product),
    without its generality, which costs more than the rest of a check."""
    return math.sqrt(v.dot(v))


@dataclass(frozen=True)
class ArmLayout:
    """Where one arm's entries sit in the command vector."""

    name: str
    joints: tuple[int, ...]  # indices of the arm joints
    gripper: int  # index of the gripper open fraction


@dataclass(frozen=True)
class ShieldConfig:
    """Limits of the shield, all from the embodiment config."""

    names: tuple[str, ...]  # one name per command entry
    arms: tuple[ArmLayout, ...]
    lower: np.ndarray  # per command entry; grippers 0
    upper: np.ndarray  # per command entry; grippers 1
    joint_limit_tolerance_rad: float
    max_joint_jump_rad: float
    max_cartesian_jump_m: float
    workspace_min: np.ndarray
    workspace_max: np.ndarray
    max_lead_rad: float = np.inf
    collision_tolerance_m: float = 0.0

    @property
    def size(self) -> int:
        return len(self.names)


@dataclass(frozen=True)
class Rejection:
    """One reason a command was rejected, in words and in numbers a program can act on."""

    # shape | finite | joint_limit | gripper_range | joint_jump | lead | workspace |
    # cartesian_jump | table_collision | arm_collision
    check: str
    message: str
    arm: str = ''
    entry: str = ''  # the command entry (joint) concerned, if any
    amount: float = 0.0  # by how much the limit is exceeded (rad, m or count)
    limit: float = 0.0  # the limit that was exceeded


@dataclass(frozen=True)
class Ruling:
    """The shield's ruling on one command: accepted, or rejected with its reasons. `command`
    is the very object that was checked, unchanged."""

    accepted: bool
    command: object
    reasons: tuple[Rejection, ...] = ()

    def messages(self) -> list[str]:
        return [r.message for r in self.reasons]


class Shield:
    """Checks commands against the limits; remembers the last accepted command."""

    def __init__(
        self, config: ShieldConfig, link_fk: LinkFK, clearance: Clearance | None = None
    ) -> None:
        self.config = config
        self._fk = link_fk
        self._clearance = clearance
        self._last: np.ndarray | None = None
        self._last_links: Sequence[np.ndarray] | None = None
        self._joints = np.array([i for arm in config.arms for i in arm.joints], dtype=int)
        # Per entry, for _within_joint_bounds: the joint limit tolerance (grippers: none) and
        # the largest step from the measured state that neither jump nor lead rejects.
        self._slack = np.zeros(config.size)
        self._slack[self._joints] = config.joint_limit_tolerance_rad
        self._step = np.full(config.size, np.inf)
        self._step[self._joints] = min(config.max_joint_jump_rad, config.max_lead_rad)
        self._bounds = (
            config.lower.tolist(),
            config.upper.tolist(),
            self._slack.tolist(),
            self._step.tolist(),
        )
        self._box = (tuple(config.workspace_min.tolist()), tuple(config.workspace_max.tolist()))

    @property
    def last_accepted(self) -> np.ndarray | None:
        return None if self._last is None else self._last.copy()

    def reset(self) -> None:
        """Forget the last accepted command (a new episode starts from the measured state)."""
        self._last = None
        self._last_links = None

    def check(self, command: object, measured: Sequence[float]) -> Ruling:
        """Check `command` against the limits, the measured state and the last accepted command.

        `measured` is the robot's state in the command layout (joint positions, gripper open
        fractions). The command is never modified; when accepted it becomes the last accepted.
        """
        cfg = self.config
        reasons = self._shape_and_finite(command)
        if reasons:
            return Ruling(False, command, tuple(reasons))
        q = np.asarray(command, dtype=float)
        m = np.asarray(measured, dtype=float)
        if m.shape != (cfg.size,) or not _all_finite(m):
            raise ValueError(f'measured state must be {cfg.size} finite numbers, got {m.shape}')
        if not self._within_joint_bounds(q, m):  # else none of the three can reject
            reasons += self._joint_limits(q, m)
            reasons += self._joint_jumps(q, m)
            reasons += self._leads(q, m)
        # Every check compares the command with the measured state ("further than already",
        # "from BOTH"), but a command within a limit passes whatever the measured state is:
        # the measured pose and contacts are computed only when a command needs them.
        links = self._fk(q)
        measured_links: list[Sequence[np.ndarray]] = []

        def at_measured() -> Sequence[np.ndarray]:
            if not measured_links:
                measured_links.append(self._fk(m))
            return measured_links[0]

        reasons += self._workspace(links, at_measured)
        reasons += self._cartesian_jumps(links, at_measured)
        if self._clearance is not None:
            reasons += self._collisions(self._clearance(q), lambda: self._clearance(m))
        if reasons:
            return Ruling(False, command, tuple(reasons))
        self._last = q.copy()
        self._last_links = [p.copy() for p in links]
        return Ruling(True, command)

    def _within_joint_bounds(self, q: np.ndarray, m: np.ndarray) -> bool:
        """Whether every entry is within its limits (arm joints: past neither limit by more
        than the tolerance; grippers: in [0, 1]) and every arm joint within both the jump and the
        lead maximum of the measured one: the joint checks cannot reject such a command. The
        differences are those the checks compute, so the answer agrees with them exactly."""
        # In Python floats: the same IEEE-754 differences and comparisons as numpy's, entry by
        # entry, at a fraction of the cost of ten array operations on 14 numbers.
        for a, b, lower, upper, slack, step in zip(
            q.tolist(), m.tolist(), *self._bounds, strict=True
        ):
            if not (lower - a <= slack and a - upper <= slack and abs(a - b) <= step):
                return False
        return True

    def _shape_and_finite(self, command: object) -> list[Rejection]:
        cfg = self.config
        try:
            q = np.asarray(command, dtype=float)
        except (TypeError, ValueError):
            return [
                Rejection(
                    'shape', f'command must be {cfg.size} numbers, got {type(command).__name__}'
                )
            ]
        if q.ndim != 1 or q.shape[0] != cfg.size:
            got = f'shape {q.shape}' if q.ndim != 1 else f'{q.shape[0]} numbers'
            return [
                Rejection(
                    'shape',
                    f'command has {got}, expected {cfg.size}',
                    amount=float(q.size),
                    limit=float(cfg.size),
                )
            ]
        if _all_finite(q):
            return []
        bad = np.flatnonzero(~np.isfinite(q))
        return [
            Rejection(
                'finite',
                f'{cfg.names[i]} is {q[i]} (commands must be finite)',
                arm=self._arm_of(i),
                entry=cfg.names[i],
            )
            for i in bad
        ]

    def _arm_of(self, index: int) -> str:
        for arm in self.config.arms:
            if index in arm.joints or index == arm.gripper:
                return arm.name
        return ''

    def _joint_limits(self, q: np.ndarray, m: np.ndarray) -> list[Rejection]:
        cfg = self.config
        tol = cfg.joint_limit_tolerance_rad
        past_lower, past_upper = cfg.lower - q, q - cfg.upper
        beyond_lower = past_lower > np.maximum(cfg.lower - m, 0.0) + tol
        beyond_upper = past_upper > np.maximum(m - cfg.upper, 0.0) + tol
        out: list[Rejection] = []
        for arm in cfg.arms:
            for i in arm.joints:
                for side, beyond, past_q, past_m, limit in (
                    ('lower', beyond_lower[i], past_lower[i], cfg.lower[i] - m[i], cfg.lower[i]),
                    ('upper', beyond_upper[i], past_upper[i], m[i] - cfg.upper[i], cfg.upper[i]),
                ):
                    if beyond:
                        already = max(past_m, 0.0)
                        out.append(
                            Rejection(
                                'joint_limit',
                                f'{cfg.names[i]} target {q[i]:.4f} rad is {past_q:.4f} rad '
                                f'past its '
                                f'{side} limit {limit:.4f} (measured {already:.4f} past, tolerance '
                                f'{tol} rad)',
                                arm=arm.name,
                                entry=cfg.names[i],
                                amount=float(past_q),
                                limit=float(limit),
                            )
                        )
            g = arm.gripper
            if not 0.0 <= q[g] <= 1.0:
                out.append(
                    Rejection(
                        'gripper_range',
                        f'{cfg.names[g]} open fraction {q[g]:.4f} is outside [0, 1]',
                        arm=arm.name,
                        entry=cfg.names[g],
                        amount=float(q[g]),
                        limit=1.0 if q[g] > 1 else 0.0,
                    )
                )
        return out

    def _joint_jumps(self, q: np.ndarray, m: np.ndarray) -> list[Rejection]:
        cfg = self.config
        limit = cfg.max_joint_jump_rad
        from_measured = np.abs(q - m)
        if not (from_measured[self._joints] > limit).any():
            return []
        from_last = np.abs(q - self._last) if self._last is not None else np.full(cfg.size, np.inf)
        out: list[Rejection] = []
        for arm in cfg.arms:
            for i in arm.joints:
                if from_measured[i] > limit and from_last[i] > limit:
                    last = (
                        f'{from_last[i]:.4f} rad from the last command'
                        if self._last is not None
                        else 'no command accepted yet'
                    )
                    out.append(
                        Rejection(
                            'joint_jump',
                            f'{cfg.names[i]} jumps {from_measured[i]:.4f} rad from the measured '
                            f'{m[i]:.4f} ({last}); max {limit} rad',
                            arm=arm.name,
                            entry=cfg.names[i],
                            amount=float(min(from_measured[i], from_last[i])),
                            limit=limit,
                        )
                    )
        return out

    def _leads(self, q: np.ndarray, m: np.ndarray) -> list[Rejection]:
        cfg = self.config
        limit = cfg.max_lead_rad
        lead = np.abs(q - m)
        if not (lead[self._joints] > limit).any():
            return []
        before = np.abs(self._last - m) if self._last is not None else np.zeros(cfg.size)
        out: list[Rejection] = []
        for arm in cfg.arms:
            for i in arm.joints:
                if lead[i] > limit and lead[i] > before[i] + _SAME:
                    out.append(
                        Rejection(
                            'lead',
                            f'{cfg.names[i]} target {q[i]:.4f} rad runs {lead[i]:.4f} rad ahead '
                            f'of the measured {m[i]:.4f} (max {limit} rad; the arm is not '
                            'following: something holds it)',
                            arm=arm.name,
                            entry=cfg.names[i],
                            amount=float(lead[i]),
                            limit=limit,
                        )
                    )
        return out

    def _collisions(self, command: Contacts, measured: Callable[[], Contacts]) -> list[Rejection]:
        cfg = self.config
        tolerance = cfg.collision_tolerance_m
        # Depths are >= 0, so a command no deeper than the tolerance passes whatever the
        # measured contacts are.
        if all(deep <= tolerance for deep in command.table) and command.arms <= tolerance:
            return []
        at_measured = measured()
        out: list[Rejection] = []
        for arm, deep, already in zip(cfg.arms, command.table, at_measured.table, strict=True):
            if deep > already + tolerance:
                out.append(
                    Rejection(
                        'table_collision',
                        f'{arm.name} arm would be {deep * 1000:.1f} mm into the table (measured '
                        f'{already * 1000:.1f} mm; tolerance {tolerance * 1000:.1f} mm)',
                        arm=arm.name,
                        amount=float(deep),
                        limit=float(already + tolerance),
                    )
                )
        if command.arms > at_measured.arms + tolerance:
            out.append(
                Rejection(
                    'arm_collision',
                    f'the arms would be {command.arms * 1000:.1f} mm into each other (measured '
                    f'{at_measured.arms * 1000:.1f} mm; tolerance {tolerance * 1000:.1f} mm)',
                    amount=float(command.arms),
                    limit=float(at_measured.arms + tolerance),
                )
            )
        return out

    def _outside(self, p: np.ndarray) -> float:
        cfg = self.config
        x, y, z = p.tolist()
        (x0, y0, z0), (x1, y1, z1) = self._box
        if x0 <= x <= x1 and y0 <= y <= y1 and z0 <= z <= z1:
            return 0.0
        gap = np.maximum(np.maximum(cfg.workspace_min - p, p - cfg.workspace_max), 0.0)
        return _norm(gap)

    def _workspace(
        self, links: Sequence[np.ndarray], measured: Callable[[], Sequence[np.ndarray]]
    ) -> list[Rejection]:
        out: list[Rejection] = []
        for k, (arm, p) in enumerate(zip(self.config.arms, links, strict=True)):
            outside = self._outside(p)
            if outside <= _SAME:  # inside: passes wherever the measured link is
                continue
            already = self._outside(measured()[k])
            if outside > already + _SAME:
                out.append(
                    Rejection(
                        'workspace',
                        f'{arm.name} link6 target ({p[0]:.3f}, {p[1]:.3f}, {p[2]:.3f}) m is '
                        f'{outside:.4f} m '
                        f'outside the workspace box (measured {already:.4f} m outside)',
                        arm=arm.name,
                        entry=f'{arm.name}_link6',
                        amount=outside,
                        limit=already,
                    )
                )
        return out

    def _cartesian_jumps(
        self, links: Sequence[np.ndarray], measured: Callable[[], Sequence[np.ndarray]]
    ) -> list[Rejection]:
        limit = self.config.max_cartesian_jump_m
        out: list[Rejection] = []
        for k, (arm, p) in enumerate(zip(self.config.arms, links, strict=True)):
            from_last = _norm(p - self._last_links[k]) if self._last_links is not None else np.inf
            if from_last <= limit:  # near the last accepted command: passes
                continue
            from_measured = _norm(p - measured()[k])
            if from_measured > limit:
                last = (
                    f'{from_last:.4f} m from the last command'
                    if self._last_links is not None
                    else 'no command accepted yet'
                )
                out.append(
                    Rejection(
                        'cartesian_jump',
                        f'{arm.name} link6 jumps {from_measured:.4f} m from the measured pose '
                        f'({last}); '
                        f'max {limit} m',
                        arm=arm.name,
                        entry=f'{arm.name}_link6',
                        amount=min(from_measured, from_last),
                        limit=limit,
                    )
                )
        return out
