"""Pick the one cube with a given number of dots among look-alikes: only the cameras tell."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Holding, Raised

# Where the three look-alike cubes stand, and which of them carries how many dots.
_SPOTS = [(-0.22, 0.0), (-0.1, 0.06), (0.02, -0.01)]
_DOTS = [(1, 3, 2), (3, 2, 1), (2, 1, 3)]
WANTED = 3


class PickNumbered(Task):
    name = 'pick_numbered'
    kind = 'pick_by_number'
    category = 'generalization'
    step_limit = 1250
    layouts = 3
    fixed = tuple(
        {f'cube_{dots}': xy for xy, dots in zip(_SPOTS, order, strict=True)} for order in _DOTS
    )
    regions = {f'cube_{dots}': Region((-0.28, 0.12), (-0.06, 0.1), 0.035) for dots in (1, 2, 3)}
    instruction = (
        f'Pick up the white cube that has {WANTED} dots on its top face and hold it at least '
        '10 cm above the table.'
    )
    description = (
        'Three identical 5 cm white cubes stand on the table; their top faces carry 1, 2 and 3 '
        'black dots, like dice. Only the cameras can tell them apart (locate calls each of them '
        f'"white cube"). Success: the cube with {WANTED} dots is held with its bottom at least '
        '10 cm above the table and no other cube is held.'
    )
    HALF = 0.025
    LIFT = 0.10

    goal = (Holding('', 0.10), Raised('white cube', 0.10))

    def build(self, spots, rng):
        out = []
        for name, xy in spots.items():
            x, y = np.array(xy) + rng.uniform(-0.005, 0.005, 2)
            dots = int(name.removeprefix('cube_'))
            out.append(
                ObjectSpec(
                    name,
                    'white cube',
                    'box',
                    (self.HALF,) * 3,
                    (0.92, 0.92, 0.9, 1.0),
                    (float(x), float(y), self.HALF),
                    yaw=float(rng.uniform(-0.2, 0.2)),
                    marks=dots,
                )
            )
        return out

    def check(self, world: WorldSnapshot) -> Outcome:
        name = f'cube_{WANTED}'
        cube = world.objects[name]
        height = float(cube.position[2] - self.HALF - world.table_top_z)
        arm = self.held_by(world, name)
        others = [n for n in world.objects if n != name and self.held_by(world, n)]
        problems = []
        if others:
            problems.append(f'the wrong cube is held ({", ".join(others)})')
        if arm is None:
            problems.append(f'the cube with {WANTED} dots is not held')
        elif height < self.LIFT:
            problems.append(
                f'the cube with {WANTED} dots is only {height * 100:.1f} cm above the table '
                f'(needs {self.LIFT * 100:.0f} cm)'
            )
        score = float(np.clip(height / self.LIFT, 0, 1)) * (arm is not None) * (not others)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, f'the {arm} gripper holds the cube with {WANTED} dots')


TASK = PickNumbered  # this module is a bench task plugin (harness_bench.tasks)
