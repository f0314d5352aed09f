"""Push a cube into a zone drawn on the table, without grasping it."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Inside


class PushToZone(Task):
    name = 'push_to_zone'
    kind = 'push'
    category = 'precision'
    step_limit = 1000
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {'cube': (-0.2, -0.02), 'zone': (-0.2, 0.12)},
        {'cube': (0.18, 0.0), 'zone': (0.05, 0.02)},
        {'cube': (-0.22, 0.06), 'zone': (-0.06, 0.06)},
    )
    # The zone 12-20 cm from the cube, away from the robot or to a side (the pushing arm stays
    # behind the cube), and not under it at the start.
    regions = {
        'cube': Region((-0.3, -0.06), (-0.06, 0.1), 0.03, 'left'),
        'zone': Region(
            (-0.32, 0.1), (-0.08, 0.16), 0.05, 'left', 0.02, 'cube', (0.12, 0.2), (0.0, 3.1416)
        ),
    }
    mirror = True
    instruction = 'Push the yellow cube into the green zone without grasping it.'
    description = (
        'A 4 cm yellow cube stands on the table; a 14 cm green square is drawn on the table. '
        "Success: the cube's centre is inside the square, the cube was never grasped, every "
        'gripper that holds nothing is open and both arms are home.'
    )
    HALF = 0.02
    ZONE_HALF = 0.07

    # The zone by its colour alone: with the cube on it, perception measures what it still sees
    # of the flat zone as a block.
    goal = (Inside('yellow cube', 'green'),)

    def build(self, spots, rng):
        (cx, cy), (zx, zy) = (
            np.array(spots[k]) + rng.uniform(-0.005, 0.005, 2) for k in ('cube', 'zone')
        )
        return [
            ObjectSpec(
                'cube',
                'yellow cube',
                'box',
                (self.HALF,) * 3,
                (0.95, 0.8, 0.1, 1.0),
                (float(cx), float(cy), self.HALF),
                yaw=float(rng.uniform(-0.3, 0.3)),
            ),
            ObjectSpec(
                'zone',
                'green zone',
                'box',
                (self.ZONE_HALF, self.ZONE_HALF, 0.0005),
                (0.2, 0.75, 0.3, 1.0),
                (float(zx), float(zy), 0.0005),
                movable=False,
                collide=False,
            ),
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        cube, zone = world.objects['cube'], world.objects['zone']
        off = np.abs(cube.position[:2] - zone.position[:2])
        problems = []
        inside = bool(np.all(off <= self.ZONE_HALF))
        if not inside:
            problems.append(
                f'the cube centre is ({off[0] * 100:.1f}, {off[1] * 100:.1f}) cm from the zone '
                f'centre (inside means within {self.ZONE_HALF * 100:.0f} cm in x and y)'
            )
        if 'cube' in world.grasped:
            problems.append('the cube was grasped')
        if cube.position[2] - self.HALF > world.table_top_z + 0.01:
            problems.append('the cube is not on the table')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.5 * (inside and 'cube' not in world.grasped) + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, 'the cube was pushed into the zone')


TASK = PushToZone  # this module is a bench task plugin (harness_bench.tasks)
