"""Put a block into a bowl."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Inside, Released


class PlaceInBowl(Task):
    name = 'place_in_bowl'
    kind = 'place'
    category = 'generalization'
    step_limit = 1250
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {'block': (-0.22, 0.0), 'bowl': (0.0, 0.05)},
        {'block': (-0.15, 0.08), 'bowl': (0.05, -0.02)},
        {'block': (0.2, 0.02), 'bowl': (-0.02, 0.06)},
    )
    # The arm that picks the block (the nearer one) carries it to the bowl.
    regions = {
        'block': Region((-0.34, -0.08), (-0.10, 0.14), 0.03, 'left'),
        'bowl': Region((-0.34, 0.08), (-0.10, 0.16), 0.08, 'left', 0.1, 'block', (0.15, 0.28)),
    }
    mirror = True
    instruction = 'Put the green block into the blue bowl.'
    description = (
        'A 4 cm green block and a blue bowl (16 cm across) stand on the table. Success: '
        "the block rests inside the bowl's footprint above the table, every gripper that "
        'holds nothing is open and both arms are back home.'
    )
    HALF = 0.02
    BOWL_RADIUS = 0.08

    goal = (Released(), Inside('green block', 'blue bowl'))

    def build(self, spots, rng):
        (bx, by), (cx, cy) = (
            np.array(spots[k]) + rng.uniform(-0.005, 0.005, 2) for k in ('block', 'bowl')
        )
        return [
            ObjectSpec(
                'block',
                'green block',
                'box',
                (self.HALF,) * 3,
                (0.1, 0.7, 0.2, 1.0),
                (float(bx), float(by), self.HALF),
                yaw=float(rng.uniform(-0.3, 0.3)),
            ),
            ObjectSpec(
                'bowl',
                'blue bowl',
                'bowl',
                (self.BOWL_RADIUS, 0.05, 0.006),
                (0.15, 0.3, 0.85, 1.0),
                (float(cx), float(cy), 0.0),
                mass=0.3,
            ),
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        block, bowl = world.objects['block'], world.objects['bowl']
        offset = float(np.linalg.norm(block.position[:2] - bowl.position[:2]))
        inner = self.BOWL_RADIUS - 0.006
        problems = self.in_container(world, 'block', 'bowl', inner, self.HALF)
        inside = not problems
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.5 * inside + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(
            True, 1.0, f'the block is in the bowl ({offset * 100:.1f} cm from its centre)'
        )


TASK = PlaceInBowl  # this module is a bench task plugin (harness_bench.tasks)
