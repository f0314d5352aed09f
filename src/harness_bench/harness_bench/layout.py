"""Layouts sampled from a seed: where a task's objects may stand, and a sampler that accepts only
feasible layouts.

A task declares one `Region` per object. `sample_spots` draws each object's spot in its region
(or at a distance and bearing from an object placed before it), keeps footprints apart, and asks
a `Feasibility` (injected: the worker answers with the station's kinematics and head camera)
whether the arms that must touch the object reach it and the head camera sees it. A draw that
fails any test is drawn again; a task whose regions give no feasible layout within the tries is
a bug in the task, and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

SAMPLED = -1  # the layout number of a layout sampled from the seed (`--layout random`)
CLEARANCE = 0.04  # m between two footprints: room for the open fingers of a grasp between them
TRIES = 400  # draws before a task's regions are declared infeasible
TRIES_PER_OBJECT = 10  # draws of one object before the whole layout is drawn again
REACH = ('nearer', 'left', 'right', 'both', 'any')


@dataclass(frozen=True)
class Region:
    """Where one object may stand.

    x, y: the ranges of its centre in the world frame (m).
    radius: the radius of its footprint (m); footprints keep `CLEARANCE` apart.
    reach: the arms that must reach its touch point: 'nearer' (the arm on its side of x = 0,
    as the skills choose), 'left', 'right', 'both', 'any' (one of them), or '' (none: a zone
    drawn on the table, a target seen but not touched).
    height: its touch point's height above the table top (m).
    near, distance, bearing: when `near` names an object placed before it, the centre lies
    `distance` (m, a range) from that object's centre, in a direction whose angle from world +x
    lies in `bearing` (rad, a range); it must still lie in x, y.
    touch: the points (dx, dy from the centre, m) the arms must reach: the centre by default,
    a long object's handles or ends otherwise.
    pitch: the shallowest tool pitch (degrees down from horizontal) a grasp there may use: 50
    by default (shallower, open fingers hit a 4 cm object); steeper where the object must stay
    upright in the hand (a peg to insert).
    """

    x: tuple[float, float]
    y: tuple[float, float]
    radius: float
    reach: str = 'nearer'
    height: float = 0.02
    near: str = ''
    distance: tuple[float, float] = (0.0, 0.0)
    bearing: tuple[float, float] = (0.0, 2 * math.pi)
    touch: tuple[tuple[float, float], ...] = ((0.0, 0.0),)
    pitch: float = 50.0

    def __post_init__(self) -> None:
        if self.reach not in (*REACH, ''):
            raise ValueError(f'reach must be one of {REACH} or empty, not {self.reach!r}')
        for name in ('x', 'y', 'distance', 'bearing'):
            lo, hi = getattr(self, name)
            if hi < lo:
                raise ValueError(f'region {name} range ({lo}, {hi}) is empty')

    def mirrored(self) -> Region:
        """The region seen in a mirror at x = 0: the other side of the table, the other arm."""
        swap = {'left': 'right', 'right': 'left'}
        return Region(
            (-self.x[1], -self.x[0]),
            self.y,
            self.radius,
            swap.get(self.reach, self.reach),
            self.height,
            self.near,
            self.distance,
            (math.pi - self.bearing[1], math.pi - self.bearing[0]),
            tuple((-dx, dy) for dx, dy in self.touch),
            self.pitch,
        )

    def arms(self, x: float) -> tuple[tuple[str, ...], bool]:
        """The arms to test at centre x, and whether all of them (True) or one must reach."""
        if self.reach == 'nearer':
            return ('left' if x < 0.0 else 'right',), True
        if self.reach in ('both', 'any'):
            return ('left', 'right'), self.reach == 'both'
        return ((self.reach,), True) if self.reach else ((), True)


class Feasibility(Protocol):
    """What the sampler asks of the station. Points are x, y in the world frame and z above
    the table top."""

    def reachable(self, arm: str, point: np.ndarray, pitch: float = 50.0) -> bool:
        """Can `arm` grasp at `point` from above, the tool `pitch` degrees down or steeper
        (and come down to it from 10 cm higher)?"""
        ...

    def in_view(self, point: np.ndarray) -> bool:
        """Does the head camera see `point`, away from the image's edges?"""
        ...


class InfeasibleRegionsError(ValueError):
    """No feasible layout was drawn: the task's regions are wrong."""


def sample_spots(
    regions: dict[str, Region],
    rng: np.random.Generator,
    feasibility: Feasibility | None,
    mirror: bool = False,
    tries: int = TRIES,
) -> dict[str, tuple[float, float]]:
    """Each region's object's centre (x, y), drawn from `rng` until the whole layout is
    feasible. With `mirror` the first draw picks the side: half the layouts use every region
    mirrored (the task's other arm does the work). Without `feasibility` only the regions and
    the footprints are checked."""
    if mirror and rng.uniform() < 0.5:
        regions = {name: region.mirrored() for name, region in regions.items()}
    why: dict[str, int] = {}
    for _ in range(tries // TRIES_PER_OBJECT):
        spots: dict[str, tuple[float, float]] = {}
        for name, region in regions.items():
            for _ in range(TRIES_PER_OBJECT):  # this object again, before the whole layout
                spot, problem = _draw(name, region, spots, regions, rng, feasibility)
                if spot is not None:
                    spots[name] = spot
                    break
                why[problem] = why.get(problem, 0) + 1
            else:
                break
        else:
            return spots
    worst = ', '.join(f'{k} ({n}x)' for k, n in sorted(why.items(), key=lambda kv: -kv[1])[:3])
    raise InfeasibleRegionsError(f'no feasible layout in {tries} draws: {worst}')


def _draw(
    name: str,
    region: Region,
    spots: dict[str, tuple[float, float]],
    regions: dict[str, Region],
    rng: np.random.Generator,
    feasibility: Feasibility | None,
) -> tuple[tuple[float, float] | None, str]:
    if region.near:
        if region.near not in spots:
            raise ValueError(
                f'region of {name!r} is near {region.near!r}, which is not placed before it'
            )
        d = rng.uniform(*region.distance)
        a = rng.uniform(*region.bearing)
        ax, ay = spots[region.near]
        x, y = ax + d * math.cos(a), ay + d * math.sin(a)
        if not (region.x[0] <= x <= region.x[1] and region.y[0] <= y <= region.y[1]):
            return None, f'{name} outside its region'
    else:
        x, y = rng.uniform(*region.x), rng.uniform(*region.y)
    for other, (ox, oy) in spots.items():
        if math.hypot(x - ox, y - oy) < region.radius + regions[other].radius + CLEARANCE:
            return None, f'{name} overlaps {other}'
    if feasibility is None:
        return (float(x), float(y)), ''
    if not feasibility.in_view(np.array([x, y, region.height])):
        return None, f'{name} out of the head camera view'
    arms, every = region.arms(x)
    for dx, dy in region.touch:
        point = np.array([x + dx, y + dy, region.height])
        # asked lazily: an arm's check is ~10 ms where it fails, and the answer is the same
        reached = (feasibility.reachable(arm, point, region.pitch) for arm in arms)
        if arms and not (all(reached) if every else any(reached)):
            return None, f'{name} out of reach of the {"/".join(arms)} arm'
    return (float(x), float(y)), ''


def layout_name(layout: int) -> str:
    """How a layout is written in folder names, tables and on the command line."""
    return 'random' if layout == SAMPLED else str(layout)


def parse_layout(text: str) -> int:
    """A layout as the command line gives it: a fixed layout's number or `random`."""
    if text.strip().lower() == 'random':
        return SAMPLED
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"a layout is a number (0, 1, ...) or 'random', not {text!r}") from None
    if value < 0:
        raise ValueError(f"a layout is a number (0, 1, ...) or 'random', not {value}")
    return value
