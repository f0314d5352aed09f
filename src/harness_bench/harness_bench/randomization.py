"""Randomised appearance: what changes between episodes besides where the objects stand.

Each axis is on or off for an episode and drawn from the episode's seed alone, from a random
stream of its own: the same seed gives the same scene, and turning one axis on or off leaves
what the others draw unchanged. One exception: a sampled layout's reach is checked at the
moved table, so with table_height on a seed may (rarely) sample another layout. The axes
(RoboTwin 2.0's domain randomisation):

- lighting: the key light's direction, intensity and colour, the fill light's intensity;
- textures: the table's texture (checker, stripes or plain, in low-saturation colours of one
  colour family, so it stays table to the cameras) and the floor's colour and texture;
- clutter: distractor objects, of shapes and colours no task object has, standing where they
  do not block the task (away from its objects and the lines between them, in the head
  camera's view);
- table_height: the table top moves up or down within the arms' reach (perception measures
  the table plane; nothing is told);
- camera: every camera's mount moves within a calibration tolerance (millimetres and a degree);
  the calibration programs read stays true, as on a real station that is calibrated again: the
  views' poses, camera_info and /tf_static give the moved cameras;
- language: the instruction is worded another way (the same request).

Pure: no simulator here. The worker turns a `SceneVariation` into the MuJoCo scene
(harness_worker.scene_variation) and /tf_static.
"""

from __future__ import annotations

import colorsys
import math
from dataclasses import dataclass

import numpy as np
from harness_types.colour_names import family_of

from harness_bench.layout import CLEARANCE, Feasibility
from harness_bench.task import ObjectSpec, Task

AXES = ('lighting', 'textures', 'clutter', 'table_height', 'camera', 'language')
RANDOMIZE_STREAM = 104729  # the first word of every axis's random stream
TABLE_OFFSET_M = 0.015  # the table top moves at most this far up or down
CAMERA_SHIFT_M = 0.005  # a camera mount moves at most this far along each axis ...
CAMERA_TURN_RAD = math.radians(1.0)  # ... and turns at most this far about each axis
CLUTTER_COUNT = (2, 4)  # distractors per scene, inclusive
CLUTTER_AWAY_M = 0.09  # between a distractor's footprint and a task object's
CLUTTER_OFF_PATH_M = 0.08  # between a distractor's centre and the line between two task objects
CLUTTER_X = (-0.55, 0.55)  # where distractors may stand (world, m): the table in front of the
CLUTTER_Y = (-0.12, 0.38)  # arms, which the head camera sees
CLUTTER_TRIES = 200
# Distractor shapes: (shape, size, label noun); sizes as ObjectSpec.size.
CLUTTER_SHAPES = (
    ('box', (0.016, 0.016, 0.016), 'cube'),
    ('cylinder', (0.018, 0.03, 0.0), 'cylinder'),
    ('box', (0.03, 0.018, 0.012), 'block'),
)
# Distractor colours by family (the perception's colour names), saturated and clear.
CLUTTER_COLOURS = {
    'red': (0.85, 0.12, 0.1),
    'orange': (0.95, 0.5, 0.08),
    'yellow': (0.92, 0.85, 0.12),
    'green': (0.15, 0.7, 0.2),
    'blue': (0.12, 0.3, 0.9),
    'purple': (0.55, 0.15, 0.75),
}
# Table colour families a texture keeps to: (hue range in degrees, saturation range). The
# default table is orange-brown; achromatic tables are grey-to-white.
TABLE_HUES = {'wood': ((22.0, 38.0), (0.32, 0.45)), 'grey': ((0.0, 360.0), (0.0, 0.12))}
TABLE_TEXTURES = ('plain', 'checker', 'stripes')
# Ways to ask the same thing: {i} the instruction, {l} it with a lower-case first letter.
PARAPHRASES = (
    'Please {l}',
    'Your task: {l}',
    '{i} Take care not to knock anything else over.',
    'Here is what to do. {i}',
    'I need your help: {l}',
    '{i} Thank you.',
)


@dataclass(frozen=True)
class Lighting:
    key_direction: tuple[float, float, float]  # unit vector the key light shines along
    key_diffuse: tuple[float, float, float]  # its colour times intensity
    fill_diffuse: tuple[float, float, float]


@dataclass(frozen=True)
class Surface:
    """A surface's look: `texture` plain, checker or stripes of colours rgb1 and rgb2 (0..1),
    its tile repeated `repeat` times a metre."""

    texture: str
    rgb1: tuple[float, float, float]
    rgb2: tuple[float, float, float]
    repeat: int = 1


@dataclass(frozen=True)
class CameraMove:
    """How far a camera's mount moved: `shift` (m) and `turn` (rad, about x, y, z), both in
    the mount's own frame (the camera link's, before it moved)."""

    shift: tuple[float, float, float]
    turn: tuple[float, float, float]

    def applied(
        self, translation: np.ndarray, rotation: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """A mount's (translation, rotation) in its parent, moved."""
        rx, ry, rz = self.turn
        turn = _rot(0, rx) @ _rot(1, ry) @ _rot(2, rz)
        return translation + rotation @ np.array(self.shift), rotation @ turn


def _rot(axis: int, angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    i, j = [k for k in range(3) if k != axis]
    r = np.eye(3)
    r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
    return r


@dataclass(frozen=True)
class SceneVariation:
    """What an episode's scene changes, beyond its layout; None / empty / 0 where its axis is
    off."""

    axes: tuple[str, ...] = ()
    lighting: Lighting | None = None
    table: Surface | None = None
    floor: Surface | None = None
    clutter: tuple[ObjectSpec, ...] = ()
    table_offset_m: float = 0.0
    cameras: tuple[tuple[str, CameraMove], ...] = ()
    instruction: str = ''

    def camera_move(self, camera: str) -> CameraMove | None:
        return dict(self.cameras).get(camera)


NO_VARIATION = SceneVariation()


class RandomizeError(ValueError):
    """A --randomize value that names no axis."""


def parse_axes(text: str) -> tuple[str, ...]:
    """The axes of a `--randomize` value: `all`, `none` (or empty), or axis names separated by
    commas (or '+', as tables write them); in AXES order."""
    words = [w.strip().lower() for w in text.replace('+', ',').split(',') if w.strip()]
    if not words or words == ['none']:
        return ()
    if words == ['all']:
        return AXES
    if {'all', 'none'} & set(words):
        raise RandomizeError('all and none stand alone: name them without other axes')
    unknown = [w for w in words if w not in AXES]
    if unknown:
        shown = ', '.join(repr(w[:40]) for w in unknown[:3]) + (', ...' if len(unknown) > 3 else '')
        raise RandomizeError(
            f'unknown randomisation axis {shown}; the axes are {", ".join(AXES)} (or all, none)'
        )
    twice = sorted({w for w in words if words.count(w) > 1})
    if twice:
        raise RandomizeError(f'randomisation axis {", ".join(twice)} named more than once')
    return tuple(a for a in AXES if a in words)


def axes_name(axes: tuple[str, ...]) -> str:
    """How a set of axes is written in folder names, tables and summaries."""
    if not axes:
        return 'none'
    return 'all' if tuple(axes) == AXES else '+'.join(axes)


def _stream(seed: int, axis: str) -> np.random.Generator:
    return np.random.default_rng([RANDOMIZE_STREAM, seed, AXES.index(axis)])


def table_offset(seed: int, axes: tuple[str, ...]) -> float:
    """How far the table top moves (m) in the episode of `seed` (drawn before the layout: the
    layout's reach is checked at the moved table)."""
    if 'table_height' not in axes:
        return 0.0
    return round(float(_stream(seed, 'table_height').uniform(-TABLE_OFFSET_M, TABLE_OFFSET_M)), 4)


def vary(
    task: Task,
    objects: list[ObjectSpec],
    seed: int,
    axes: tuple[str, ...],
    cameras: tuple[str, ...],
    feasibility: Feasibility | None = None,
) -> SceneVariation:
    """The variation of the episode of `seed` with `axes` on, for `task` whose layout stands as
    `objects`; `cameras` are the station's, `feasibility` says what the head camera sees."""
    if not axes:
        return SceneVariation(instruction=task.instruction)
    lighting = table = floor = None
    if 'lighting' in axes:
        lighting = _lighting(_stream(seed, 'lighting'))
    if 'textures' in axes:
        rng = _stream(seed, 'textures')
        table, floor = _table_surface(rng), _floor_surface(rng)
    clutter: tuple[ObjectSpec, ...] = ()
    if 'clutter' in axes:
        clutter = _clutter(_stream(seed, 'clutter'), objects, feasibility)
    offset = table_offset(seed, axes)
    moves: tuple[tuple[str, CameraMove], ...] = ()
    if 'camera' in axes:
        rng = _stream(seed, 'camera')
        moves = tuple(
            (
                c,
                CameraMove(
                    tuple(float(v) for v in rng.uniform(-CAMERA_SHIFT_M, CAMERA_SHIFT_M, 3)),
                    tuple(float(v) for v in rng.uniform(-CAMERA_TURN_RAD, CAMERA_TURN_RAD, 3)),
                ),
            )
            for c in cameras
        )
    instruction = task.instruction
    if 'language' in axes:
        instruction = paraphrase(task.instruction, _stream(seed, 'language'))
    return SceneVariation(tuple(axes), lighting, table, floor, clutter, offset, moves, instruction)


def paraphrase(instruction: str, rng: np.random.Generator) -> str:
    """`instruction` worded another way, the request itself unchanged (a task that reads its
    instruction finds the same words in it)."""
    template = PARAPHRASES[int(rng.integers(len(PARAPHRASES)))]
    lower = instruction[:1].lower() + instruction[1:]
    return template.format(i=instruction, l=lower)


def _lighting(rng: np.random.Generator) -> Lighting:
    tilt = rng.uniform(0.0, math.radians(35.0))
    azimuth = rng.uniform(0.0, 2 * math.pi)
    direction = (
        math.sin(tilt) * math.cos(azimuth),
        math.sin(tilt) * math.sin(azimuth),
        -math.cos(tilt),
    )
    intensity = rng.uniform(0.55, 1.0)
    tint = rng.uniform(0.85, 1.0, 3)
    tint /= tint.max()
    key = tuple(round(float(v), 4) for v in intensity * tint)
    fill = round(float(rng.uniform(0.15, 0.45)), 4)
    return Lighting(tuple(round(v, 4) for v in direction), key, (fill, fill, fill))


def _hsv(rng: np.random.Generator, family: str, value: tuple[float, float]) -> np.ndarray:
    (h0, h1), (s0, s1) = TABLE_HUES[family]
    return np.array(
        colorsys.hsv_to_rgb(rng.uniform(h0, h1) / 360.0, rng.uniform(s0, s1), rng.uniform(*value))
    )


def _rgb(v: np.ndarray) -> tuple[float, float, float]:
    return tuple(round(float(c), 4) for c in np.clip(v, 0.0, 1.0))


def _table_surface(rng: np.random.Generator) -> Surface:
    family = str(rng.choice(sorted(TABLE_HUES)))
    base = _hsv(rng, family, (0.45, 0.75))
    texture = str(rng.choice(TABLE_TEXTURES))
    # the second colour: the same hue and saturation, lighter or darker (one colour family)
    h, s, v = colorsys.rgb_to_hsv(*base)
    second = np.array(
        colorsys.hsv_to_rgb(h, s, float(np.clip(v + rng.choice([-1, 1]) * 0.12, 0.3, 0.9)))
    )
    return Surface(texture, _rgb(base), _rgb(second), int(rng.integers(4, 12)))


def _floor_surface(rng: np.random.Generator) -> Surface:
    base = rng.uniform(0.1, 0.8, 3)
    return Surface(
        str(rng.choice(TABLE_TEXTURES)), _rgb(base), _rgb(base * 0.6), int(rng.integers(2, 10))
    )


def _families_of(objects: list[ObjectSpec]) -> set[str]:
    """The colour families of the task's objects."""
    return {family_of(o.rgba[:3]) for o in objects}


def _footprint(o: ObjectSpec) -> float:
    if o.shape in ('box', 'tray', 'cabinet', 'socket'):
        return math.hypot(o.size[0], o.size[1]) if o.shape != 'socket' else o.size[0] * 1.42
    return o.size[0]


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    ab = b - a
    t = 0.0 if not ab.any() else float(np.clip((p - a) @ ab / (ab @ ab), 0.0, 1.0))
    return float(np.linalg.norm(p - (a + t * ab)))


def _clutter(
    rng: np.random.Generator, objects: list[ObjectSpec], feasibility: Feasibility | None
) -> tuple[ObjectSpec, ...]:
    used = _families_of(objects)
    colours = [name for name in CLUTTER_COLOURS if name not in used]
    if not colours:
        return ()
    roots = [o for o in objects if not o.parent]
    centres = [np.array(o.position[:2]) for o in roots]
    radii = [_footprint(o) for o in roots]
    count = int(rng.integers(CLUTTER_COUNT[0], CLUTTER_COUNT[1] + 1))
    placed: list[tuple[np.ndarray, float]] = []
    out = []
    for k in range(count):
        shape, size, noun = CLUTTER_SHAPES[int(rng.integers(len(CLUTTER_SHAPES)))]
        colour = colours[int(rng.integers(len(colours)))]
        radius = math.hypot(size[0], size[1]) if shape == 'box' else size[0]
        for _ in range(CLUTTER_TRIES):
            p = rng.uniform([CLUTTER_X[0], CLUTTER_Y[0]], [CLUTTER_X[1], CLUTTER_Y[1]])
            yaw = float(rng.uniform(-math.pi, math.pi))
            if any(
                np.linalg.norm(p - c) < r + radius + CLUTTER_AWAY_M
                for c, r in zip(centres, radii, strict=True)
            ):
                continue
            if any(
                _segment_distance(p, a, b) < CLUTTER_OFF_PATH_M + radius
                for i, a in enumerate(centres)
                for b in centres[i + 1 :]
            ):
                continue
            if any(np.linalg.norm(p - q) < r + radius + CLEARANCE for q, r in placed):
                continue
            half = size[2] if shape == 'box' else size[1]
            if feasibility is not None and not feasibility.in_view(np.array([p[0], p[1], half])):
                continue
            break
        else:
            continue  # no room for this one: the scene has fewer distractors
        placed.append((p, radius))
        rgb = CLUTTER_COLOURS[colour]
        out.append(
            ObjectSpec(
                f'clutter_{k}',
                f'{colour} {noun}',
                shape,
                size,
                (*rgb, 1.0),
                (round(float(p[0]), 4), round(float(p[1]), 4), half),
                yaw=round(yaw, 4),
                mass=0.03,
            )
        )
    return tuple(out)
