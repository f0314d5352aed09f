"""Stack one block on another."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import On, Released

TOLERANCE = np.array([0.025, 0.025, 0.012])


class StackBlocksTwo(Task):
    name = 'stack_blocks_two'
    kind = 'stack'
    category = 'precision'
    step_limit = 1250
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    # Both blocks within one arm's comfortable reach.
    fixed = (
        {'base_block': (-0.2, 0.0), 'top_block': (-0.05, 0.06)},
        {'base_block': (0.2, 0.05), 'top_block': (0.06, -0.02)},
        {'base_block': (-0.12, 0.08), 'top_block': (-0.03, -0.03)},
    )
    regions = {
        'base_block': Region((-0.32, -0.04), (-0.08, 0.12), 0.03, 'left'),
        'top_block': Region(
            (-0.34, -0.02), (-0.10, 0.14), 0.03, 'left', 0.02, 'base_block', (0.08, 0.2)
        ),
    }
    mirror = True
    instruction = 'Stack the yellow block on top of the purple block.'
    description = (
        'Two 4 cm blocks, purple and yellow, stand on the table. Success: the yellow '
        'block rests on the purple one (offset within 2.5 cm in x and y, 1.2 cm in '
        'height), every gripper that holds nothing is open and both arms are home.'
    )
    HALF = 0.02

    goal = (Released(), On('yellow block', 'purple block'))

    def build(self, spots, rng):
        (ax, ay), (bx, by) = (
            np.array(spots[k]) + rng.uniform(-0.005, 0.005, 2) for k in ('base_block', 'top_block')
        )
        return [
            ObjectSpec(
                'base_block',
                'purple block',
                'box',
                (self.HALF,) * 3,
                (0.5, 0.2, 0.7, 1.0),
                (float(ax), float(ay), self.HALF),
                yaw=float(rng.uniform(-0.3, 0.3)),
            ),
            ObjectSpec(
                'top_block',
                'yellow block',
                'box',
                (self.HALF,) * 3,
                (0.95, 0.8, 0.1, 1.0),
                (float(bx), float(by), self.HALF),
                yaw=float(rng.uniform(-0.3, 0.3)),
            ),
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        base, top = world.objects['base_block'], world.objects['top_block']
        want = base.position + np.array([0.0, 0.0, 2 * self.HALF])
        error = np.abs(top.position - want)
        problems = []
        if np.any(error > TOLERANCE):
            problems.append(
                f'the yellow block is off by ({error[0] * 100:.1f}, {error[1] * 100:.1f}, '
                f'{error[2] * 100:.1f}) cm from on top of the purple one (tolerance 2.5, '
                f'2.5, 1.2 cm)'
            )
        if self.held_by(world, 'top_block'):
            problems.append('the yellow block is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        stacked = not np.any(error > TOLERANCE)
        score = 0.5 * stacked + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, 'the yellow block is stacked on the purple block')


TASK = StackBlocksTwo  # this module is a bench task plugin (harness_bench.tasks)
