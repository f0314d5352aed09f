"""Lift a cube off the table and hold it in the air."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Holding, Raised


class LiftCube(Task):
    name = 'lift_cube'
    kind = 'lift'
    category = 'generalization'
    step_limit = 750  # 30 s at 25 Hz
    layouts = 3
    fixed = ({'cube': (-0.22, -0.02)}, {'cube': (-0.15, 0.05)}, {'cube': (-0.28, 0.08)})
    regions = {'cube': Region((-0.34, -0.06), (-0.10, 0.14), 0.03, 'left')}
    instruction = 'Pick up the red cube and hold it at least 10 cm above the table.'
    description = (
        'A 4 cm red cube stands on the table in front of the left arm. Success: the '
        'cube is held by a gripper with its bottom at least 10 cm above the table top.'
    )
    HALF = 0.02
    LIFT = 0.10

    goal = (Holding('', 0.10), Raised('red cube', 0.10))

    def build(self, spots, rng):
        x, y = np.array(spots['cube']) + rng.uniform(-0.005, 0.005, 2)
        return [
            ObjectSpec(
                'cube',
                'red cube',
                'box',
                (self.HALF,) * 3,
                (0.85, 0.1, 0.1, 1.0),
                (float(x), float(y), self.HALF),
                yaw=float(rng.uniform(-0.3, 0.3)),
            )
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        cube = world.objects['cube']
        height = float(cube.position[2] - self.HALF - world.table_top_z)
        arm = self.held_by(world, 'cube')
        score = float(np.clip(height / self.LIFT, 0.0, 1.0)) * (1.0 if arm else 0.5)
        if arm is None:
            return Outcome(
                False, score, f'the cube is not held (bottom {height * 100:.1f} cm above the table)'
            )
        if height < self.LIFT:
            return Outcome(
                False,
                score,
                f'the cube is held by the {arm} gripper but only '
                f'{height * 100:.1f} cm above the table (needs {self.LIFT * 100:.0f} cm)',
            )
        return Outcome(
            True, 1.0, f'the {arm} gripper holds the cube {height * 100:.1f} cm above the table'
        )


TASK = LiftCube  # this module is a bench task plugin (harness_bench.tasks)
