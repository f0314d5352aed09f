"""Place a cube centred on a small target drawn on the table, within 1 cm."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Inside, Released

HALF = 0.02  # a 4 cm cube
TARGET = 0.03  # the target disc's radius: 6 cm across, 1 cm of it showing around a centred cube
CENTRED = 0.01  # how far (xy) the cube's centre may be from the target's centre


class PlaceOnTarget(Task):
    name = 'place_on_target'
    kind = 'place'
    category = 'precision'
    step_limit = 1250
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {'cube': (-0.2, 0.06), 'target': (-0.1, -0.06)},
        {'cube': (0.08, 0.1), 'target': (0.22, 0.0)},
        {'cube': (-0.06, -0.04), 'target': (-0.22, 0.08)},
    )
    # The target 10-20 cm from the cube, both within the reach of the arm on their side
    # (mirrored: the other arm).
    regions = {
        'cube': Region((-0.3, -0.06), (-0.08, 0.12), 0.03, 'left'),
        'target': Region((-0.32, -0.04), (-0.1, 0.14), 0.03, 'left', HALF, 'cube', (0.1, 0.2)),
    }
    mirror = True
    instruction = 'Put the blue cube down centred on the small green target drawn on the table.'
    description = (
        'A 4 cm blue cube stands on the table; a green disc 6 cm across is drawn on the table. '
        f'Success: the cube stands on the table with its centre within {CENTRED * 100:.0f} cm '
        "of the disc's centre, let go; every gripper that holds nothing is open and both arms "
        'are home.'
    )

    # The target by its colour alone: with the cube on it, perception measures the ring it
    # still sees of the flat disc.
    goal = (Released(), Inside('blue cube', 'green'))

    def build(self, spots, rng):
        (cx, cy), (tx, ty) = (
            np.array(spots[k]) + rng.uniform(-0.005, 0.005, 2) for k in ('cube', 'target')
        )
        return [
            ObjectSpec(
                'cube',
                'blue cube',
                'box',
                (HALF,) * 3,
                (0.15, 0.3, 0.85, 1.0),
                (float(cx), float(cy), HALF),
                yaw=float(rng.uniform(-0.3, 0.3)),
            ),
            ObjectSpec(
                'target',
                'green zone',
                'cylinder',
                (TARGET, 0.0005, 0.0),
                (0.2, 0.75, 0.3, 1.0),
                (float(tx), float(ty), 0.0005),
                movable=False,
                collide=False,
            ),
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        cube, target = world.objects['cube'], world.objects['target']
        offset = float(np.linalg.norm(cube.position[:2] - target.position[:2]))
        problems = []
        on_table = cube.position[2] - HALF < world.table_top_z + 0.005
        centred = offset <= CENTRED and on_table
        if offset > CENTRED:
            problems.append(
                f"the cube's centre is {offset * 100:.1f} cm from the target's centre (within "
                f'{CENTRED * 100:.0f} cm counts)'
            )
        if not on_table:
            problems.append('the cube is not standing on the table')
        if self.held_by(world, 'cube'):
            problems.append('the cube is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.5 * centred + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, f"the cube stands {offset * 100:.1f} cm from the target's centre")


TASK = PlaceOnTarget  # this module is a bench task plugin (harness_bench.tasks)
