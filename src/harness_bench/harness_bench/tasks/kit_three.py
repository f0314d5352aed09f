"""Kitting: put each of three blocks into the square drawn on the table in its colour."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Inside, Released

_RGBA = {
    'red': (0.85, 0.15, 0.1, 1.0),
    'green': (0.15, 0.7, 0.2, 1.0),
    'yellow': (0.95, 0.8, 0.1, 1.0),
}
_PAIRS = ('a', 'b', 'c')  # block_<p> goes to slot_<p>; build gives each pair a colour
# A slot is a square mark drawn on the table (a flat box felt by nothing, as push_to_zone's
# zone), a little smaller than its block: a block put on it hides it, or joins with what still
# shows beside its base (one colour, touching: one object to the pixels). A larger slot left
# a margin behind the block that the cameras saw cut off from it, a flat piece of that colour
# on its own; an outline split in two (along a thin line the pixels blend with the tan table:
# green passes through yellow, blue through grey). A program measures the slots before it
# puts the first block down.
SLOT = (0.018, 0.018, 0.0005)  # half extents: a 3.6 cm square under a 4 cm block
TOLERANCE = 0.02  # m (xy) between a block's centre and its slot's


class KitThree(Task):
    name = 'kit_three'
    kind = 'kit'  # no policy of the catalogue learned it: programs only
    category = 'long_horizon'
    step_limit = 1300  # the reference takes 580-690 env steps
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    # Pairs a and b on one side, c on the other: each block's nearer arm reaches its slot.
    # The blocks stand crosswise to the slots, so the nearest slot is not always the right one.
    fixed = (
        {
            'slot_a': (-0.26, 0.08),
            'slot_b': (-0.1, 0.04),
            'slot_c': (0.22, 0.08),
            'block_a': (-0.12, -0.1),
            'block_b': (-0.28, -0.06),
            'block_c': (0.12, -0.06),
        },
        {
            'slot_a': (0.26, 0.06),
            'slot_b': (0.1, 0.06),
            'slot_c': (-0.18, 0.1),
            'block_a': (0.1, -0.09),
            'block_b': (0.26, -0.08),
            'block_c': (-0.24, -0.04),
        },
        {
            'slot_a': (-0.3, -0.02),
            'slot_b': (-0.14, 0.1),
            'slot_c': (0.12, -0.06),
            'block_a': (-0.16, -0.05),
            'block_b': (-0.3, 0.12),
            'block_c': (0.26, 0.06),
        },
    )
    # Sampled: two pairs on the left arm's side, one on the right's (mirrored: the other way
    # round); slots away from the robot's edge of the table, blocks anywhere on their side.
    regions = {
        'slot_a': Region((-0.34, -0.06), (-0.04, 0.14), 0.04, 'left', 0.03),
        'slot_b': Region((-0.34, -0.06), (-0.04, 0.14), 0.04, 'left', 0.03),
        'slot_c': Region((0.06, 0.34), (-0.04, 0.14), 0.04, 'right', 0.03),
        'block_a': Region((-0.36, -0.04), (-0.12, 0.14), 0.03, 'left'),
        'block_b': Region((-0.36, -0.04), (-0.12, 0.14), 0.03, 'left'),
        'block_c': Region((0.04, 0.36), (-0.12, 0.14), 0.03, 'right'),
    }
    mirror = True
    instruction = (
        'Put each block on the square zone (mark) of its colour: red on red, green on green, '
        'yellow on yellow.'
    )
    description = (
        'Three 4 cm blocks (red, green, yellow) stand on the table, and three 3.6 cm square zones '
        '(marks) in the same colours are drawn on it. Success: each '
        f'block rests on the table with its centre within {TOLERANCE * 100:.0f} cm of the centre '
        'of the zone of its colour, let go; every gripper that holds nothing is open and both '
        'arms are home.'
    )
    HALF = 0.02

    # A slot by its colour, as the smallest object of it (it is flat): its block on it hides
    # it or is one object with it to the pixels, and the claim holds, as it should.
    goal = (
        Released(),
        Inside('red cube', 'smallest red'),
        Inside('green cube', 'smallest green'),
        Inside('yellow cube', 'smallest yellow'),
    )

    def build(self, spots, rng):
        # Which colour each pair has comes from the layout's stream too.
        colours = [list(_RGBA)[int(k)] for k in rng.permutation(len(_RGBA))]
        self.colour_of = dict(zip(_PAIRS, colours, strict=True))
        out = []
        for pair, colour in self.colour_of.items():
            x, y = np.array(spots[f'slot_{pair}']) + rng.uniform(-0.005, 0.005, 2)
            out.append(
                ObjectSpec(
                    f'{colour}_slot',
                    f'{colour} zone',
                    'box',
                    SLOT,
                    _RGBA[colour],
                    (float(x), float(y), SLOT[2]),
                    yaw=float(rng.uniform(-0.1, 0.1)),
                    movable=False,
                    collide=False,
                )
            )
        for pair, colour in self.colour_of.items():
            x, y = np.array(spots[f'block_{pair}']) + rng.uniform(-0.005, 0.005, 2)
            out.append(
                ObjectSpec(
                    f'{colour}_block',
                    f'{colour} block',
                    'box',
                    (self.HALF,) * 3,
                    _RGBA[colour],
                    (float(x), float(y), self.HALF),
                    yaw=float(rng.uniform(-0.3, 0.3)),
                )
            )
        return out

    def check(self, world: WorldSnapshot) -> Outcome:
        problems, kitted = [], 0
        for colour in _RGBA:
            block, slot = world.objects[f'{colour}_block'], world.objects[f'{colour}_slot']
            offset = float(np.linalg.norm(block.position[:2] - slot.position[:2]))
            wrong = []
            if offset > TOLERANCE:
                wrong.append(
                    f'the {colour} block is {offset * 100:.1f} cm from the centre of the '
                    f'{colour} zone (within {TOLERANCE * 100:.0f} cm asked)'
                )
            lift = float(block.position[2] - self.HALF - world.table_top_z)
            if abs(lift) > 0.01:
                wrong.append(
                    f'the {colour} block does not rest on the table (its bottom '
                    f'{lift * 100:.1f} cm above it)'
                )
            if self.held_by(world, f'{colour}_block'):
                wrong.append(f'the {colour} block is still held')
            problems += wrong
            kitted += not wrong
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.25 * kitted + 0.25 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, 'every block is in the zone of its colour')


TASK = KitThree  # this module is a bench task plugin (harness_bench.tasks)
