"""Sort blocks by colour into two bins."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Inside, Released

_BLOCKS = (('red_block_1', 'red'), ('blue_block', 'blue'), ('red_block_2', 'red'))
_NAMES = ('red_block_1', 'blue_block', 'red_block_2', 'red_bin', 'blue_bin')
_RGBA = {'red': (0.85, 0.12, 0.1, 1.0), 'blue': (0.12, 0.3, 0.85, 1.0)}


class SortByColour(Task):
    name = 'sort_by_colour'
    kind = 'sort'
    category = 'long_horizon'
    step_limit = 3000
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    # Blocks (red, blue, red) and bins (red, blue): each block's nearer arm reaches its bin.
    fixed = tuple(
        dict(zip(_NAMES, spots, strict=True))
        for spots in (
            ((-0.24, -0.02), (0.22, -0.02), (-0.12, -0.04), (-0.12, 0.1), (0.1, 0.1)),
            ((0.24, -0.02), (-0.22, 0.0), (0.1, -0.06), (0.1, 0.1), (-0.1, 0.1)),
            ((0.22, -0.02), (-0.24, 0.0), (0.06, -0.06), (0.1, 0.1), (-0.12, 0.1)),
        )
    )
    # Sampled: the red bin and blocks on one side, the blue ones on the other, the bins further
    # from the robot (mirrored, the sides swap).
    regions = {
        'red_bin': Region((-0.24, -0.04), (0.06, 0.16), 0.08, 'left', 0.08),
        'blue_bin': Region((0.04, 0.24), (0.06, 0.16), 0.08, 'right', 0.08),
        'red_block_1': Region((-0.32, -0.04), (-0.1, 0.06), 0.03, 'left'),
        'blue_block': Region((0.04, 0.32), (-0.1, 0.06), 0.03, 'right'),
        'red_block_2': Region((-0.32, -0.04), (-0.1, 0.06), 0.03, 'left'),
    }
    mirror = True
    instruction = 'Sort the blocks by colour: red blocks into the red bin, blue into the blue bin.'
    description = (
        'Three 4 cm blocks (two red, one blue) and two round bins (16 cm across, a red and a '
        'blue one) stand on the table. Success: every block rests inside the bin of its colour, '
        'every gripper that holds nothing is open and both arms are home.'
    )
    HALF = 0.02
    BIN_RADIUS = 0.08

    goal = (Released(), Inside('red block', 'red bin'), Inside('blue block', 'blue bin'))

    def build(self, spots, rng):
        out = []
        for name, colour in _BLOCKS:
            x, y = np.array(spots[name]) + rng.uniform(-0.005, 0.005, 2)
            out.append(
                ObjectSpec(
                    name,
                    f'{colour} block',
                    'box',
                    (self.HALF,) * 3,
                    _RGBA[colour],
                    (float(x), float(y), self.HALF),
                    yaw=float(rng.uniform(-0.3, 0.3)),
                )
            )
        for colour in ('red', 'blue'):
            x, y = np.array(spots[f'{colour}_bin']) + rng.uniform(-0.005, 0.005, 2)
            dim = tuple(0.6 * c for c in _RGBA[colour][:3]) + (1.0,)
            out.append(
                ObjectSpec(
                    f'{colour}_bin',
                    f'{colour} bin',
                    'bowl',
                    (self.BIN_RADIUS, 0.04, 0.006),
                    dim,
                    (float(x), float(y), 0.0),
                    mass=0.3,
                )
            )
        return out

    def check(self, world: WorldSnapshot) -> Outcome:
        problems, sorted_blocks = [], 0
        for name, colour in _BLOCKS:
            wrong = self.in_container(
                world, name, f'{colour}_bin', self.BIN_RADIUS - 0.006, self.HALF
            )
            problems += [f'{name}: {p}' for p in wrong]
            sorted_blocks += not wrong
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.25 * sorted_blocks + 0.25 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, 'every block is in the bin of its colour')


TASK = SortByColour  # this module is a bench task plugin (harness_bench.tasks)
