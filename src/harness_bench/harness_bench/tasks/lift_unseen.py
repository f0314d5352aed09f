"""Lift an object of a shape and a colour no other task uses: both come from the layout.

The held-out set lives here (the other generalization tasks draw from it too): shapes of
unusual proportions (a tall box, a flat box, a wide and a slim cylinder) and colour shades no
other task's loose objects have (lime, cyan, lemon, magenta). Each shade belongs to a family
the perception names, so its label is that family's word ('green', 'blue', ...), which every
perception backend gives; the instruction names the magenta shade 'magenta', a word locate()
reads as purple but no task used before.
"""

import re

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, ObjectState, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Holding, Raised


class Shape:
    """A held-out shape: its ObjectSpec shape and size, the noun locate() labels it with (the
    pixels perception's measured shape), its half height and its narrowest half side in the
    table plane."""

    def __init__(self, name, shape, size, noun):
        self.name, self.shape, self.size, self.noun = name, shape, size, noun
        self.half_height = size[1] if shape == 'cylinder' else size[2]
        self.half_side = size[0] if shape == 'cylinder' else min(size[0], size[1])

    def bottom(self, state: ObjectState) -> float:
        """The height of the object's lowest point, however it is turned (a held object may
        tilt in the fingers)."""
        w, x, y, z = (float(v) for v in state.quat)
        # The world z of each of the object's axes (the last row of its rotation matrix).
        up = np.abs([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)])
        if self.shape == 'cylinder':
            radius, half = self.size[0], self.size[1]
            drop = up[2] * half + radius * float(np.sqrt(max(0.0, 1.0 - up[2] ** 2)))
        else:
            drop = float(up @ np.asarray(self.size))
        return float(state.position[2]) - drop


# A 3.2 x 3.2 x 7 cm box measures as a block (too tall for a cube), so does a 5 x 6 x 2.6 cm one
# (too flat); a 6 cm wide cylinder 6 cm tall and a 3.4 cm one 8.4 cm tall as cylinders (one
# slimmer than that is seen as a block at times: too few points on its top). Every one fits
# the open fingers (88 mm) across x, turned by up to 0.25 rad.
SHAPES = (
    Shape('tall box', 'box', (0.016, 0.016, 0.035), 'block'),
    Shape('flat box', 'box', (0.025, 0.03, 0.013), 'block'),
    Shape('wide cylinder', 'cylinder', (0.03, 0.03, 0.0), 'cylinder'),
    Shape('slim cylinder', 'cylinder', (0.017, 0.042, 0.0), 'cylinder'),
)
# Shade -> (the family word of its label, the word the instruction uses, rgba). Hues (degrees)
# sit at least 12 from the perception's band edges (a tinted key light turns them less) and at
# least 10 from every other task's loose objects (test_tasks_generalization checks). No
# red or orange: the table is orange-brown, and its shaded far parts can read red to the pixels
# perception (a flat patch locate() may find).
COLOURS = {
    'lime': ('green', 'green', (0.4, 0.85, 0.15, 1.0)),  # hue 99 (older greens ~130)
    'cyan': ('blue', 'blue', (0.1, 0.7, 0.85, 1.0)),  # hue 192 (older blues ~227)
    'lemon': ('yellow', 'yellow', (0.82, 0.85, 0.1, 1.0)),  # hue 62 (older yellows ~49)
    'magenta': ('purple', 'magenta', (0.8, 0.12, 0.75, 1.0)),  # hue 304 (older purples ~276)
}
# The object the instruction names (a reworded instruction keeps these words).
ABOUT = re.compile(r'pick up the (\w+) (\w+)', re.IGNORECASE)


def held_out_shape(rng: np.random.Generator) -> Shape:
    return SHAPES[int(rng.integers(len(SHAPES)))]


def held_out_shade(rng: np.random.Generator, exclude: tuple[str, ...] = ()) -> str:
    """A held-out shade (a key of COLOURS) whose colour family is not in `exclude`."""
    shades = [s for s, (family, _, _) in COLOURS.items() if family not in exclude]
    return shades[int(rng.integers(len(shades)))]


class LiftUnseen(Task):
    name = 'lift_unseen'
    kind = 'lift'
    category = 'generalization'
    step_limit = 750  # 30 s at 25 Hz
    layouts = 3
    fixed = ({'object': (-0.22, 0.0)}, {'object': (0.16, 0.06)}, {'object': (-0.12, 0.08)})
    # Footprints up to 3.9 cm from the centre; the grasp of the tallest is ~4 cm up.
    regions = {'object': Region((-0.32, -0.06), (-0.08, 0.12), 0.04, 'left', 0.04)}
    mirror = True
    # The instruction and the goal are the layout's (build sets them); these say what they are.
    instruction = (
        'Pick up the <colour> <block or cylinder> and hold it at least 10 cm above the table.'
    )
    description = (
        'One object stands on the table, of a shape and colour shade no other task uses: a '
        'tall (3.2 x 3.2 x 7 cm) or flat (5 x 6 x 2.6 cm) box, or a wide (6 cm across, 6 cm tall) '
        'or slim (3.4 cm across, 8.4 cm tall) cylinder; lime, cyan, lemon or magenta. '
        'The instruction names its colour and shape. Success: it is held by a gripper with its '
        'bottom at least 10 cm above the table top.'
    )
    LIFT = 0.10
    goal = (Holding('', 0.10), Raised('object', 0.10))  # claims() names the object
    shape, shade = SHAPES[0], 'lime'  # the layout's (build draws them)

    def build(self, spots, rng):
        self.shape, self.shade = held_out_shape(rng), held_out_shade(rng)
        family, word, rgba = COLOURS[self.shade]
        self.instruction = (
            f'Pick up the {word} {self.shape.noun} and hold it at least 10 cm above the table.'
        )
        x, y = np.array(spots['object']) + rng.uniform(-0.005, 0.005, 2)
        return [
            ObjectSpec(
                'object',
                f'{family} {self.shape.noun}',
                self.shape.shape,
                self.shape.size,
                rgba,
                (float(x), float(y), self.shape.half_height),
                yaw=float(rng.uniform(-0.25, 0.25)),
            )
        ]

    def claims(self, instruction: str) -> tuple:
        found = ABOUT.search(instruction)
        if found is None:
            return self.goal
        return (Holding('', self.LIFT), Raised(' '.join(found.groups()), self.LIFT))

    def check(self, world: WorldSnapshot) -> Outcome:
        target = world.objects['object']
        height = self.shape.bottom(target) - world.table_top_z
        arm = self.held_by(world, 'object')
        score = float(np.clip(height / self.LIFT, 0.0, 1.0)) * (1.0 if arm else 0.5)
        if arm is None:
            return Outcome(
                False,
                score,
                f'the {target.label} is not held (bottom {height * 100:.1f} cm above the table)',
            )
        if height < self.LIFT:
            return Outcome(
                False,
                score,
                f'the {target.label} is held by the {arm} gripper but only '
                f'{height * 100:.1f} cm above the table (needs {self.LIFT * 100:.0f} cm)',
            )
        return Outcome(
            True,
            1.0,
            f'the {arm} gripper holds the {target.label} {height * 100:.1f} cm above the table',
        )


TASK = LiftUnseen  # this module is a bench task plugin (harness_bench.tasks)
