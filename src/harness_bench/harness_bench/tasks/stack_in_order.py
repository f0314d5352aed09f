"""Stack three blocks in the order the instruction states: the order changes with the layout."""

import itertools
import re

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import On, Released

TOLERANCE = np.array([0.025, 0.025, 0.012])
_RGBA = {
    'red': (0.85, 0.15, 0.1, 1.0),
    'green': (0.15, 0.7, 0.2, 1.0),
    'blue': (0.15, 0.3, 0.85, 1.0),
}
_ORDERS = list(itertools.permutations(_RGBA))  # bottom to top


class StackInOrder(Task):
    name = 'stack_in_order'
    kind = 'stack'
    category = 'long_horizon'
    step_limit = 2500
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {'red': (-0.2, 0.0), 'green': (-0.08, 0.07), 'blue': (-0.06, -0.04)},
        {'red': (0.2, 0.03), 'green': (0.07, 0.08), 'blue': (0.08, -0.03)},
        {'red': (-0.14, 0.07), 'green': (-0.24, -0.02), 'blue': (-0.04, 0.0)},
    )
    # All three within one arm's reach (mirrored: the other arm's).
    regions = {
        'red': Region((-0.32, -0.06), (-0.08, 0.12), 0.03, 'left'),
        'green': Region((-0.34, -0.02), (-0.10, 0.14), 0.03, 'left', 0.02, 'red', (0.08, 0.2)),
        'blue': Region((-0.34, -0.02), (-0.10, 0.14), 0.03, 'left', 0.02, 'red', (0.08, 0.2)),
    }
    mirror = True
    # The instruction and the goal are the layout's (build sets them); these say what they are.
    instruction = (
        'Stack the blocks in this order, bottom to top: <a permutation of red, green, blue>.'
    )
    goal = (Released(), On('block', 'block'))  # some block on another; claims() says which
    description = (
        'Three 4 cm blocks, red, green and blue, stand on the table. Success: the blocks form '
        'a tower in the stated order, bottom to top (each offset within 2.5 cm in x and y, '
        '1.2 cm in height from on top of the one below), every gripper that holds nothing is '
        'open and both arms are home.'
    )
    HALF = 0.02

    def build(self, spots, rng):
        # The order comes from the layout's stream too: a new seed may ask for another one.
        order = _ORDERS[int(rng.integers(len(_ORDERS)))]
        self.order = order
        self.instruction = f'Stack the blocks in this order, bottom to top: {", ".join(order)}.'
        out = []
        for colour in _RGBA:
            x, y = np.array(spots[colour]) + rng.uniform(-0.005, 0.005, 2)
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

    def claims(self, instruction: str) -> tuple:
        found = re.search(r'bottom to top: (\w+), (\w+), (\w+)', instruction)
        if found is None:
            return self.goal
        order = found.groups()
        return (
            Released(),
            *(On(f'{b} block', f'{a} block') for a, b in zip(order, order[1:], strict=False)),
        )

    def check(self, world: WorldSnapshot) -> Outcome:
        problems, stacked = [], 0
        for lower, upper in zip(self.order, self.order[1:], strict=False):
            want = world.objects[f'{lower}_block'].position + np.array([0.0, 0.0, 2 * self.HALF])
            error = np.abs(world.objects[f'{upper}_block'].position - want)
            if np.any(error > TOLERANCE):
                problems.append(
                    f'the {upper} block is off by ({error[0] * 100:.1f}, {error[1] * 100:.1f}, '
                    f'{error[2] * 100:.1f}) cm from on top of the {lower} block (tolerance '
                    f'2.5, 2.5, 1.2 cm)'
                )
            else:
                stacked += 1
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.25 * stacked + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, f'the tower is {", ".join(self.order)}, bottom to top')


TASK = StackInOrder  # this module is a bench task plugin (harness_bench.tasks)
