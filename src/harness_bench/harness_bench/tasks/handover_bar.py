"""Hand a bar from the left arm to the right arm."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Holding, Raised, Released


class HandoverBar(Task):
    name = 'handover_bar'
    kind = 'handover'
    category = 'long_horizon'
    step_limit = 1500
    layouts = 3
    fixed = ({'bar': (-0.15, 0.0)}, {'bar': (-0.12, 0.05)}, {'bar': (-0.18, -0.03)})
    regions = {'bar': Region((-0.24, -0.08), (-0.06, 0.1), 0.08, 'left', 0.015)}
    instruction = 'Pick up the orange bar with the left arm and hand it to the right arm.'
    description = (
        'A 16 cm orange bar lies on the table in front of the left arm, pointing away '
        'from the robot. Success: the right gripper holds the bar at least 5 cm above '
        'the table and the left gripper is open and holds nothing.'
    )
    HALF = (0.015, 0.08, 0.015)

    goal = (Holding('right', 0.05), Released('left'), Raised('orange bar', 0.05))

    def build(self, spots, rng):
        x, y = np.array(spots['bar']) + rng.uniform(-0.005, 0.005, 2)
        return [
            ObjectSpec(
                'bar',
                'orange bar',
                'box',
                self.HALF,
                (0.95, 0.5, 0.1, 1.0),
                (float(x), float(y), self.HALF[2]),
                yaw=float(rng.uniform(-0.1, 0.1)),
                mass=0.08,
            )
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        bar = world.objects['bar']
        height = float(bar.position[2] - self.HALF[2] - world.table_top_z)
        holders = [arm for arm, a in world.arms.items() if 'bar' in a.holding]
        left = world.arms['left']
        problems = []
        if holders != ['right']:
            problems.append(
                f'the bar is held by {holders or "nothing"}, not by the right arm alone'
            )
        if height < 0.05:
            problems.append(f'the bar is only {height * 100:.1f} cm above the table')
        if left.gripper < self.conventions.open_above:
            problems.append(f'the left gripper is only {left.gripper:.2f} open')
        score = 0.5 * ('right' in holders) + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(
            True, 1.0, f'the right arm holds the bar {height * 100:.1f} cm above the table'
        )


TASK = HandoverBar  # this module is a bench task plugin (harness_bench.tasks)
