"""Stack three blocks into a tower."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import On, Released

TOLERANCE = np.array([0.025, 0.025, 0.012])
_BLOCKS = (
    ('base_block', 'red block', (0.85, 0.15, 0.1, 1.0)),
    ('middle_block', 'green block', (0.15, 0.7, 0.2, 1.0)),
    ('top_block', 'blue block', (0.15, 0.3, 0.85, 1.0)),
)


class StackBlocksThree(Task):
    name = 'stack_blocks_three'
    kind = 'stack'
    category = 'long_horizon'
    step_limit = 2500
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    # All within the left or all within the right arm's reach.
    fixed = (
        {'base_block': (-0.2, 0.0), 'middle_block': (-0.08, 0.07), 'top_block': (-0.06, -0.04)},
        {'base_block': (0.2, 0.03), 'middle_block': (0.07, 0.08), 'top_block': (0.08, -0.03)},
        {'base_block': (-0.14, 0.07), 'middle_block': (-0.24, -0.02), 'top_block': (-0.04, 0.0)},
    )
    regions = {
        'base_block': Region((-0.32, -0.06), (-0.08, 0.12), 0.03, 'left'),
        'middle_block': Region(
            (-0.34, -0.02), (-0.10, 0.14), 0.03, 'left', 0.02, 'base_block', (0.08, 0.2)
        ),
        'top_block': Region(
            (-0.34, -0.02), (-0.10, 0.14), 0.03, 'left', 0.02, 'base_block', (0.08, 0.2)
        ),
    }
    mirror = True
    instruction = 'Build a tower: the green block on the red block, then the blue block on top.'
    description = (
        'Three 4 cm blocks, red, green and blue, stand on the table. Success: green rests on red '
        'and blue on green (each offset within 2.5 cm in x and y, 1.2 cm in height), every '
        'gripper that holds nothing is open and both arms are home.'
    )
    HALF = 0.02

    goal = (Released(), On('green block', 'red block'), On('blue block', 'green block'))

    def build(self, spots, rng):
        out = []
        for name, label, rgba in _BLOCKS:
            x, y = np.array(spots[name]) + rng.uniform(-0.005, 0.005, 2)
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
        problems, stacked = [], 0
        for (lower, lower_label, _), (upper, upper_label, _) in zip(
            _BLOCKS, _BLOCKS[1:], strict=False
        ):
            want = world.objects[lower].position + np.array([0.0, 0.0, 2 * self.HALF])
            error = np.abs(world.objects[upper].position - want)
            if np.any(error > TOLERANCE):
                problems.append(
                    f'the {upper_label} is off by ({error[0] * 100:.1f}, {error[1] * 100:.1f}, '
                    f'{error[2] * 100:.1f}) cm from on top of the {lower_label} (tolerance '
                    f'2.5, 2.5, 1.2 cm)'
                )
            else:
                stacked += 1
            if self.held_by(world, upper):
                problems.append(f'the {upper_label} is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.35 * stacked + 0.3 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, 'the blocks stand as a tower: red, green, blue')


TASK = StackBlocksThree  # this module is a bench task plugin (harness_bench.tasks)
