"""Put an object of a held-out shape and colour into a bowl of a held-out colour: the object,
the bowl and the words that name them come from the layout (lift_unseen's held-out set)."""

import re

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.tasks.lift_unseen import COLOURS, SHAPES, held_out_shade, held_out_shape
from harness_bench.verifier import Inside, Released

WALL = 0.006  # the bowl's wall thickness (m)
BOWL_HEIGHT = 0.05
BOWL_RADII = (0.075, 0.09)  # its outer radius is drawn from this range
# The object and the bowl the instruction names (a reworded instruction keeps these words).
ABOUT = re.compile(r'put the (\w+) (\w+) into the (\w+) bowl', re.IGNORECASE)


class PlaceUnseenInBowl(Task):
    name = 'place_unseen_in_bowl'
    kind = 'place'
    category = 'generalization'
    step_limit = 1250
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {'object': (-0.22, 0.0), 'bowl': (0.0, 0.05)},
        {'object': (-0.15, 0.08), 'bowl': (0.05, -0.02)},
        {'object': (0.2, 0.02), 'bowl': (-0.02, 0.06)},
    )
    # The arm that picks the object (the nearer one) carries it to the bowl.
    regions = {
        'object': Region((-0.34, -0.08), (-0.10, 0.14), 0.04, 'left', 0.04),
        'bowl': Region(
            (-0.34, 0.08), (-0.10, 0.16), BOWL_RADII[1], 'left', 0.1, 'object', (0.17, 0.28)
        ),
    }
    mirror = True
    # The instruction and the goal are the layout's (build sets them); these say what they are.
    instruction = 'Put the <colour> <block or cylinder> into the <another colour> bowl.'
    description = (
        'An object of a shape and colour shade no older task uses (a tall or flat box, a wide '
        'or slim cylinder; lime, cyan, lemon or magenta) and a bowl (15 to 18 cm across, 5 cm '
        'high) of another of those shades stand on the table; the instruction names both by '
        "colour and shape. Success: the object rests inside the bowl's footprint above the "
        'table, let go, every gripper that holds nothing is open and both arms are back home.'
    )
    goal = (Released(), Inside('object', 'bowl'))  # claims() names the two
    shape, shade, bowl_shade, bowl_radius = SHAPES[0], 'lime', 'cyan', BOWL_RADII[0]

    def build(self, spots, rng):
        self.shape, self.shade = held_out_shape(rng), held_out_shade(rng)
        family, word, rgba = COLOURS[self.shade]
        self.bowl_shade = held_out_shade(rng, exclude=(family,))
        bowl_family, bowl_word, bowl_rgba = COLOURS[self.bowl_shade]
        self.bowl_radius = round(float(rng.uniform(*BOWL_RADII)), 3)
        self.instruction = f'Put the {word} {self.shape.noun} into the {bowl_word} bowl.'
        (ox, oy), (bx, by) = (
            np.array(spots[k]) + rng.uniform(-0.005, 0.005, 2) for k in ('object', 'bowl')
        )
        return [
            ObjectSpec(
                'object',
                f'{family} {self.shape.noun}',
                self.shape.shape,
                self.shape.size,
                rgba,
                (float(ox), float(oy), self.shape.half_height),
                yaw=float(rng.uniform(-0.25, 0.25)),
            ),
            ObjectSpec(
                'bowl',
                f'{bowl_family} bowl',
                'bowl',
                (self.bowl_radius, BOWL_HEIGHT, WALL),
                bowl_rgba,
                (float(bx), float(by), 0.0),
                mass=0.3,
            ),
        ]

    def claims(self, instruction: str) -> tuple:
        found = ABOUT.search(instruction)
        if found is None:
            return self.goal
        what, noun, where = found.groups()
        return (Released(), Inside(f'{what} {noun}', f'{where} bowl'))

    def check(self, world: WorldSnapshot) -> Outcome:
        target, bowl = world.objects['object'], world.objects['bowl']
        offset = float(np.linalg.norm(target.position[:2] - bowl.position[:2]))
        # Inside: its centre at least half its narrowest half side within the inner wall.
        within = self.bowl_radius - WALL - 0.5 * self.shape.half_side
        problems = []
        if offset > within:
            problems.append(
                f'the {target.label} is {offset * 100:.1f} cm from the centre of the '
                f'{bowl.label} (inside means under {within * 100:.1f} cm)'
            )
        if self.shape.bottom(target) < world.table_top_z - 0.005:
            problems.append(f'the {target.label} is below the table top')
        if self.held_by(world, 'object'):
            problems.append(f'the {target.label} is still held')
        inside = not problems
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.5 * inside + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(
            True,
            1.0,
            f'the {target.label} is in the {bowl.label} ({offset * 100:.1f} cm from its centre)',
        )


TASK = PlaceUnseenInBowl  # this module is a bench task plugin (harness_bench.tasks)
