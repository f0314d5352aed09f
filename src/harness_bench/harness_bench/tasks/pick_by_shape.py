"""Pick an object by its shape: three objects of one colour, a cube, a cylinder and a bar; the
instruction names the shape of the one to lift, which the layout draws, and the colour only to
say which three objects it means (a held-out shade, also drawn): the colour alone tells them
not apart. (Naming the shape alone would be ambiguous in a scene with clutter: a distractor
of another colour may be a cylinder or a cube too.)
"""

import re

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.tasks.lift_unseen import COLOURS, held_out_shade
from harness_bench.verifier import Holding, Raised

# name (= the noun of its label and of the instruction), ObjectSpec shape, size, half height.
# Each noun is a word locate() gives that one shape only: 'cube' no block or bar answers to,
# 'cylinder' (also a button's word: there is none), 'bar' no cube answers to.
_OBJECTS = (
    ('cube', 'box', (0.02, 0.02, 0.02), 0.02),
    ('cylinder', 'cylinder', (0.02, 0.03, 0.0), 0.03),
    ('bar', 'box', (0.015, 0.05, 0.015), 0.015),
)
_HALF_HEIGHT = {name: half for name, _, _, half in _OBJECTS}
LIFT = 0.10
# The colour and the shape the instruction names (a reworded instruction keeps these words).
ABOUT = re.compile(r'three (\w+) objects, pick up the (\w+)', re.IGNORECASE)


class PickByShape(Task):
    name = 'pick_by_shape'
    # Lifting, but which object is the task: a policy that learned to lift one would not know.
    kind = 'pick_by_shape'
    category = 'generalization'
    step_limit = 1000
    layouts = 3
    fixed = (
        {'cube': (-0.22, 0.0), 'cylinder': (-0.08, 0.07), 'bar': (0.08, -0.01)},
        {'cube': (0.06, 0.06), 'cylinder': (-0.2, -0.02), 'bar': (0.2, 0.0)},
        {'cube': (-0.1, -0.03), 'cylinder': (0.1, 0.02), 'bar': (-0.24, 0.06)},
    )
    # The bar's footprint reaches 5.2 cm from its centre; the others' under 3.
    regions = {
        'cube': Region((-0.28, 0.28), (-0.06, 0.1), 0.03),
        'cylinder': Region((-0.28, 0.28), (-0.06, 0.1), 0.03),
        'bar': Region((-0.28, 0.28), (-0.06, 0.1), 0.052),
    }
    # The instruction and the goal are the layout's (build sets them); these say what they are.
    instruction = (
        'Among the three <colour> objects, pick up the <cube, cylinder or bar> and hold it at '
        'least 10 cm above the table.'
    )
    description = (
        'A cube (4 cm), a cylinder (4 cm across, 6 cm tall) and a bar (3 x 10 x 3 cm) of one '
        'colour shade no older task uses (lime, cyan, lemon or magenta) stand on the table; the '
        'instruction names their colour and the shape of the one to lift. Success: that object '
        'is held with its bottom at least 10 cm above the table, and nothing else is held.'
    )
    goal = (Holding('', LIFT),)  # claims() names the object
    target, shade = 'cube', 'lime'  # the layout's (build draws them)

    def build(self, spots, rng):
        self.target = _OBJECTS[int(rng.integers(len(_OBJECTS)))][0]
        self.shade = held_out_shade(rng)
        family, word, rgba = COLOURS[self.shade]
        self.instruction = (
            f'Among the three {word} objects, pick up the {self.target} and hold it at least '
            '10 cm above the table.'
        )
        out = []
        for name, shape, size, half in _OBJECTS:
            x, y = np.array(spots[name]) + rng.uniform(-0.005, 0.005, 2)
            out.append(
                ObjectSpec(
                    name,
                    f'{family} {name}',
                    shape,
                    size,
                    rgba,
                    (float(x), float(y), half),
                    yaw=float(rng.uniform(-0.25, 0.25)),
                )
            )
        return out

    def claims(self, instruction: str) -> tuple:
        found = ABOUT.search(instruction)
        if found is None:
            return self.goal
        return (Holding('', LIFT), Raised(' '.join(found.groups()).lower(), LIFT))

    def check(self, world: WorldSnapshot) -> Outcome:
        target = world.objects[self.target]
        height = float(target.position[2] - _HALF_HEIGHT[self.target] - world.table_top_z)
        arm = self.held_by(world, self.target)
        others = [n for n in world.objects if n != self.target and self.held_by(world, n)]
        problems = []
        if others:
            problems.append(f'the wrong object is held ({", ".join(others)})')
        if arm is None:
            problems.append(f'the {self.target} is not held')
        elif height < LIFT:
            problems.append(
                f'the {self.target} is only {height * 100:.1f} cm above the table '
                f'(needs {LIFT * 100:.0f} cm)'
            )
        score = float(np.clip(height / LIFT, 0, 1)) * (arm is not None) * (not others)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, f'the {arm} gripper holds the {self.target}')


TASK = PickByShape  # this module is a bench task plugin (harness_bench.tasks)
