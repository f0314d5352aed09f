"""Swap two blocks' places: where each stood is no longer in view once the first one moves."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Apart, Released

_BLOCKS = (
    ('red_block', 'red block', (0.85, 0.15, 0.1, 1.0)),
    ('blue_block', 'blue block', (0.15, 0.3, 0.85, 1.0)),
)
TOLERANCE = 0.02  # m (x, y): each block ends this close to where the other one stood


class SwapBlocks(Task):
    name = 'swap_blocks'
    kind = 'place'
    category = 'memory'
    step_limit = 3000
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    # Both within one arm's reach, with room beside them for one block set aside.
    fixed = (
        {'red_block': (-0.2, 0.0), 'blue_block': (-0.08, 0.07)},
        {'red_block': (0.2, 0.03), 'blue_block': (0.07, 0.06)},
        {'red_block': (-0.14, 0.07), 'blue_block': (-0.26, -0.04)},
    )
    regions = {
        'red_block': Region((-0.32, -0.06), (-0.08, 0.1), 0.03, 'left'),
        'blue_block': Region(
            (-0.32, -0.06), (-0.08, 0.1), 0.03, 'left', 0.02, 'red_block', (0.1, 0.2)
        ),
    }
    mirror = True
    instruction = 'Swap the places of the red block and the blue block.'
    description = (
        'Two 4 cm blocks, a red and a blue one, stand on the table. Success: each block stands '
        'on the table within 2 cm (x and y) of where the other one stood at the start, both '
        'were grasped, every gripper that holds nothing is open and both arms are home. While '
        "one block is set aside, the other's start spot is empty: it must be remembered."
    )
    HALF = 0.02

    # Where each block stood is the layout's (the check reads it): the verifier, which knows
    # only the instruction, sees the two let go and standing apart (at least 10 cm at the start,
    # and so after the swap), not one left on the other or beside it.
    goal = (Released(), Apart('red block', 'blue block', 0.08))

    def build(self, spots, rng):
        out, self.start = [], {}
        for name, label, rgba in _BLOCKS:
            x, y = np.array(spots[name]) + rng.uniform(-0.005, 0.005, 2)
            self.start[name] = np.array([x, y])
            out.append(
                ObjectSpec(
                    name,
                    label,
                    'box',
                    (self.HALF,) * 3,
                    rgba,
                    (float(x), float(y), self.HALF),
                    yaw=float(rng.uniform(-0.3, 0.3)),
                )
            )
        return out

    def check(self, world: WorldSnapshot) -> Outcome:
        problems, swapped = [], 0
        for (name, label, _), (other, other_label, _) in zip(_BLOCKS, _BLOCKS[::-1], strict=True):
            block = world.objects[name]
            off = float(np.linalg.norm(block.position[:2] - self.start[other]))
            if off > TOLERANCE:
                problems.append(
                    f'the {label} is {off * 100:.1f} cm from where the {other_label} stood '
                    f'(within {TOLERANCE * 100:.0f} cm asked)'
                )
            else:
                swapped += 1
            if block.position[2] - self.HALF > world.table_top_z + 0.01:
                problems.append(f'the {label} is not on the table')
            if name not in world.grasped:
                problems.append(f'the {label} was never grasped')
            if self.held_by(world, name):
                problems.append(f'the {label} is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.35 * swapped + 0.3 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, 'the red and the blue block swapped places')


TASK = SwapBlocks  # this module is a bench task plugin (harness_bench.tasks)
