"""Pick a cube off a slow conveyor: the target moves while the arm reaches for it."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Holding, Raised

SLED = (0.06, 0.06, 0.005)  # half extents of the conveyor's sled the cube rides on
TRAVEL = 0.3  # m the sled glides along +x before it stops
SPEED = 0.015  # m/s
HALF = 0.02
LIFT = 0.05


class PickMoving(Task):
    name = 'pick_moving'
    kind = 'lift'
    category = 'precision'
    step_limit = 1250
    layouts = 3
    fixed = ({'sled': (-0.3, 0.0)}, {'sled': (-0.24, 0.06)}, {'sled': (-0.2, -0.04)})
    # The cube within reach of the nearer arm at the start and 15 cm (10 s) further on.
    regions = {
        'sled': Region(
            (-0.32, -0.16), (-0.06, 0.08), 0.09, 'nearer', 0.03, touch=((0.0, 0.0), (0.15, 0.0))
        )
    }
    instruction = 'Pick up the orange cube from the moving conveyor and lift it at least 5 cm.'
    description = (
        'A 4 cm orange cube rides a grey sled (12 cm square) that glides along the table toward '
        f'+x at {SPEED * 100:.1f} cm/s while the robot moves, for up to {TRAVEL * 100:.0f} cm. '
        'Success: a gripper holds the cube with its bottom at least 5 cm above the table.'
    )

    goal = (Holding('', LIFT), Raised('orange cube', LIFT))

    def build(self, spots, rng):
        x, y = np.array(spots['sled']) + rng.uniform(-0.005, 0.005, 2)
        lift = SLED[2] * 2 + 0.001  # the sled floats 1 mm above the table: it glides freely
        return [
            ObjectSpec(
                'sled',
                'grey sled',
                'box',
                SLED,
                (0.45, 0.45, 0.48, 1.0),
                (float(x), float(y), 0.001 + SLED[2]),
                mass=5.0,
                slide=(TRAVEL, 0.0, 0.0),
                speed=SPEED,
            ),
            ObjectSpec(
                'cube',
                'orange cube',
                'box',
                (HALF,) * 3,
                (0.95, 0.5, 0.1, 1.0),
                (float(x), float(y), lift + HALF),
                yaw=float(rng.uniform(-0.3, 0.3)),
            ),
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        cube = world.objects['cube']
        height = float(cube.position[2] - HALF - world.table_top_z)
        arm = self.held_by(world, 'cube')
        score = float(np.clip(height / (LIFT + 0.011), 0.0, 1.0)) * (1.0 if arm else 0.5)
        if arm is None:
            return Outcome(
                False, score, f'the cube is not held (bottom {height * 100:.1f} cm above the table)'
            )
        if height < LIFT:
            return Outcome(
                False,
                score,
                f'the {arm} gripper holds the cube only {height * 100:.1f} cm above the table '
                f'(needs {LIFT * 100:.0f} cm)',
            )
        return Outcome(
            True, 1.0, f'the {arm} gripper holds the cube {height * 100:.1f} cm above the table'
        )


TASK = PickMoving  # this module is a bench task plugin (harness_bench.tasks)
