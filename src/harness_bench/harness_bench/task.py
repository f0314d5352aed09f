"""The task interface: scenes as data, layouts from a seed, instructions, success checks.

A task knows nothing of ROS or of the simulator's API: it lists the objects to add, and judges
a `WorldSnapshot` the worker measured. Success follows the RoboTwin 2.0 / RoboDojo conventions
(../shared/ARX_X5.md): unless a task says otherwise, every gripper that holds nothing must be at
least `open_above` open and both arms home.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from harness_bench.layout import SAMPLED, Feasibility, Region, sample_spots

ARMS = ('left', 'right')
# The camera name under which a task's picture is served (look(PICTURE) in a program; the
# start message shows it to the model): the object it shows, alone, cut from the head camera.
PICTURE = 'task_picture'
# The bench's categories (RoboDojo's): what a task measures beyond its motions. Generalization:
# objects, words and scenes the agent did not see; precision: millimetres and timing; long
# horizon: many stages, each needing the one before; memory: what was seen and is no longer in
# view; open: articulated things (drawers, doors, lids).
CATEGORIES = ('generalization', 'precision', 'long_horizon', 'memory', 'open')


@dataclass(frozen=True)
class ObjectSpec:
    """An object a task adds to the station.

    shape: 'box' (size = half extents), 'cylinder' (size = radius, half height, -),
    'bowl' (size = outer radius, height, wall thickness; open at the top), 'tray' (size = half
    extents with its handles: a plate with a 4 cm wide, 7 cm long handle at each y end),
    'socket' (size = outer half width, hole half width, half height: a square block with a
    square hole through it), 'cabinet' (size = outer half extents: a shell of 1 cm walls, open
    toward the robot, -y), 'bin' (size = outer half extents: a box of 1 cm walls, open at the
    top; a drawer that holds things).
    position: x, y in the world frame; z of the object's origin above the table top (a bowl's
    origin is its bottom, the others' their centre). With a `parent`, relative to the parent's
    origin instead: the object is mounted on it and moves with it (the parent comes first in
    the scene, and the two do not collide with each other).
    slide: a movable object slides along this vector (m, in its parent's frame or the world's)
    from where it stands, as far as the vector is long: a drawer or a conveyor's sled, not a
    free body. speed: its speed along the slide at the start (m/s); it glides on unhindered.
    hinge: a movable object turns about a hinge instead, given as (axis, point, (lower,
    upper)): the hinge line runs along `axis` through `point`, both in its parent's frame (the
    world's without a parent), `point` as `position` is (relative to the parent's origin, or x,
    y and z above the table top); it turns lower..upper rad from where it stands, positive by
    the right-hand rule about `axis` (a lid, a door; damped).
    """

    name: str
    label: str
    shape: str
    size: tuple[float, float, float]
    rgba: tuple[float, float, float, float]
    position: tuple[float, float, float]
    yaw: float = 0.0
    mass: float = 0.05
    movable: bool = True
    collide: bool = True  # False: seen by the cameras, felt by nothing (a zone drawn on the table)
    latch_force: float = 0.0  # > 0: a button that latches once the robot presses it this hard (N)
    latched_rgba: tuple[float, float, float, float] | None = None  # its colour once latched
    marks: int = 0  # dark dots printed on the top face (a box's number, as on a die)
    parent: str = ''
    slide: tuple[float, float, float] | None = None
    speed: float = 0.0
    hinge: (
        tuple[tuple[float, float, float], tuple[float, float, float], tuple[float, float]] | None
    ) = None


@dataclass(frozen=True)
class ObjectState:
    name: str
    label: str
    position: np.ndarray
    quat: np.ndarray  # w, x, y, z
    size: tuple[float, float, float]


@dataclass(frozen=True)
class ArmSnapshot:
    gripper: float  # measured open fraction
    holding: tuple[str, ...]  # objects touched by both fingers
    tcp_position: np.ndarray
    tcp_rotation: np.ndarray
    home_position: np.ndarray  # the TCP's start pose of the episode
    home_rotation: np.ndarray


@dataclass(frozen=True)
class WorldSnapshot:
    """What a success check may look at, measured by the worker."""

    objects: dict[str, ObjectState]
    arms: dict[str, ArmSnapshot]
    table_top_z: float
    step: int = 0
    contacts: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    latched: frozenset[str] = field(default_factory=frozenset)  # buttons pressed so far
    latch_order: tuple[str, ...] = ()  # the same buttons, in the order they latched
    grasped: frozenset[str] = field(default_factory=frozenset)  # objects held at any tick so far


@dataclass(frozen=True)
class Outcome:
    success: bool
    score: float
    detail: str


@dataclass(frozen=True)
class Conventions:
    """Numbers of the shared success conventions (from the embodiment config)."""

    open_above: float = 0.8
    home_tolerance_m: float = 0.15
    home_tolerance_rad: float = np.radians(20.0)


Spots = dict[str, tuple[float, float]]  # object name -> its centre x, y in the world frame
# The first word of a sampled layout's random stream: fixed layouts use their number (< this).
SAMPLED_STREAM = 7919


class Task(ABC):
    """One bench task. Subclasses set the class attributes and implement `build` and `check`.

    Layouts: `fixed` holds the development layouts 0..layouts-1 (each object's spot);
    `regions` says where each object may stand in a layout sampled from a seed
    (harness_bench.layout). `build` turns spots into objects; the seed's generator adds a few
    millimetres of jitter and the objects' turns.

    The bench's rule (the reference benchmark's): the episode ends as soon as the task
    succeeds. A task whose success is only judged after the wrap-up (arms home, idle grippers
    open) sets `judged_after_wrap_up`."""

    name: str = ''
    # What sort of task it is, in the words of the policy catalogue (lift, place, stack, press,
    # push, sort, handover, pick_by_number): start(strategy, kind) names it.
    kind: str = ''
    category: str = ''  # one of CATEGORIES
    step_limit: int = 0
    layouts: int = 3
    fixed: tuple[Spots, ...] = ()
    regions: dict[str, Region] = {}
    mirror: bool = False  # sampled layouts may be mirrored at x = 0 (the other arm does the work)
    instruction: str = ''
    description: str = ''
    judged_after_wrap_up: bool = False
    # The object a task shows as a picture rather than naming it ('' for none): the start
    # message and look(PICTURE) give it.
    picture: str = ''
    # The goal as the tiered verifier measures it (harness_bench.verifier claims): what tiers
    # 1 and 2 check without the ground truth `check` reads.
    goal: tuple = ()

    def __init__(self, conventions: Conventions | None = None) -> None:
        self.conventions = conventions or Conventions()

    def scene(
        self, layout: int, seed: int, feasibility: Feasibility | None = None
    ) -> list[ObjectSpec]:
        """The objects of a fixed layout (`seed` jitters them a few millimetres), or of the
        layout sampled from `seed` (layout `SAMPLED`), checked with `feasibility`;
        deterministic either way."""
        if seed < 0:
            raise ValueError(f'a seed is a non-negative integer, not {seed}')
        if layout == SAMPLED:
            rng = np.random.default_rng([SAMPLED_STREAM, seed])
            return self.build(sample_spots(self.regions, rng, feasibility, self.mirror), rng)
        if not 0 <= layout < self.layouts:
            raise ValueError(
                f'{self.name} has layouts 0..{self.layouts - 1} (or random), not {layout}'
            )
        return self.build(self.fixed[layout], np.random.default_rng([layout, seed]))

    @abstractmethod
    def build(self, spots: Spots, rng: np.random.Generator) -> list[ObjectSpec]:
        """The objects standing at `spots`; `rng` jitters them and turns them."""

    @abstractmethod
    def check(self, world: WorldSnapshot) -> Outcome: ...

    def claims(self, instruction: str) -> tuple:
        """The goal the tiered verifier measures for an episode given `instruction` (the
        same for every episode, unless the instruction says something the goal follows)."""
        return self.goal

    # Shared conventions ---------------------------------------------------------------------

    def idle_grippers_open(self, world: WorldSnapshot) -> list[str]:
        """Problems with grippers that hold nothing but are not open enough (empty when fine)."""
        return [
            f'{arm} gripper holds nothing but is only {a.gripper:.2f} open (needs > '
            f'{self.conventions.open_above})'
            for arm, a in world.arms.items()
            if not a.holding and a.gripper < self.conventions.open_above
        ]

    def arms_home(self, world: WorldSnapshot) -> list[str]:
        """Problems with arms away from their start pose (empty when both are home)."""
        out = []
        for arm, a in world.arms.items():
            off = float(np.abs(a.tcp_position - a.home_position).max())
            cos = (np.trace(a.home_rotation.T @ a.tcp_rotation) - 1.0) / 2.0
            angle = float(np.arccos(np.clip(cos, -1.0, 1.0)))
            if (
                off > self.conventions.home_tolerance_m
                or angle > self.conventions.home_tolerance_rad
            ):
                out.append(f'{arm} arm is not home ({off:.3f} m, {np.degrees(angle):.0f} deg away)')
        return out

    def in_container(
        self, world: WorldSnapshot, name: str, container: str, radius: float, half: float
    ) -> list[str]:
        """Problems with object `name` (half height `half`) being inside the round container
        `container` of inner `radius` (empty when it is in and let go)."""
        obj, bowl = world.objects[name], world.objects[container]
        offset = float(np.linalg.norm(obj.position[:2] - bowl.position[:2]))
        problems = []
        if offset > radius - half * 0.5:
            problems.append(
                f'the {obj.label} is {offset * 100:.1f} cm from the centre of the '
                f'{bowl.label} (inside means under {(radius - half * 0.5) * 100:.1f} cm)'
            )
        if obj.position[2] - half < world.table_top_z - 0.005:
            problems.append(f'the {obj.label} is below the table top')
        if self.held_by(world, name):
            problems.append(f'the {obj.label} is still held')
        return problems

    def held_by(self, world: WorldSnapshot, name: str) -> str | None:
        for arm, a in world.arms.items():
            if name in a.holding:
                return arm
        return None
