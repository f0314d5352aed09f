"""Clear the table: three objects, one after another, into one bin between the arms."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Inside, Released

# name, label, shape, size, rgba, half height
_ITEMS = (
    ('red_cube', 'red cube', 'box', (0.02, 0.02, 0.02), (0.85, 0.12, 0.1, 1.0), 0.02),
    ('yellow_cube', 'yellow cube', 'box', (0.02, 0.02, 0.02), (0.95, 0.8, 0.1, 1.0), 0.02),
    (
        'green_cylinder',
        'green cylinder',
        'cylinder',
        (0.02, 0.03, 0.0),
        (0.15, 0.7, 0.2, 1.0),
        0.03,
    ),
)
BIN = (0.11, 0.04, 0.006)  # outer radius, height, wall: 22 cm across, 4 cm deep
# Three spots in the bin along its y axis, 6 cm apart (far, middle, near), filled far first:
# the fingers open along x, so they miss the objects already in, and the tool leans toward
# the robot, away from them. Both arms reach each spot wherever the bin is drawn.
SPOTS = ((0.0, 0.06), (0.0, 0.0), (0.0, -0.06))


class ClearTable(Task):
    name = 'clear_table'
    kind = 'clear'  # no policy of the catalogue learned it: programs only
    category = 'long_horizon'
    step_limit = 1400  # the reference takes 700-760 env steps
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {
            'bin': (0.0, -0.06),
            'red_cube': (-0.24, 0.02),
            'yellow_cube': (0.22, 0.06),
            'green_cylinder': (-0.14, 0.1),
        },
        {
            'bin': (0.02, -0.05),
            'red_cube': (0.24, -0.04),
            'yellow_cube': (-0.26, 0.04),
            'green_cylinder': (0.16, 0.1),
        },
        {
            'bin': (-0.02, -0.08),
            'red_cube': (0.2, 0.08),
            'yellow_cube': (-0.2, 0.1),
            'green_cylinder': (-0.28, -0.04),
        },
    )
    # Sampled: the bin between the arms where both reach each of its spots; one object on each
    # side and one anywhere, each within its nearer arm's reach.
    regions = {
        'bin': Region((-0.03, 0.03), (-0.1, -0.03), BIN[0], 'both', 0.03, touch=SPOTS),
        'red_cube': Region((-0.36, -0.06), (-0.12, 0.14), 0.03),
        'yellow_cube': Region((0.06, 0.36), (-0.12, 0.14), 0.03),
        'green_cylinder': Region((-0.36, 0.36), (-0.12, 0.14), 0.03, height=0.03),
    }
    mirror = True
    instruction = (
        'Clear the table: put the red cube, the yellow cube and the green cylinder into the blue '
        'bin.'
    )
    description = (
        'A red and a yellow 4 cm cube and a green cylinder (4 cm across, 6 cm tall) stand on the '
        'table around a blue bin (a round bowl 22 cm across, 4 cm deep). Success: all three rest '
        "inside the bin's footprint, below its rim (not on top of one another), let go; every "
        'gripper that holds nothing is open and both arms are home.'
    )

    # The objects by their colours alone: down in the bin, its wall hides part of them and a
    # cube may measure as a lower block.
    goal = (
        Released(),
        Inside('red', 'blue bin'),
        Inside('yellow', 'blue bin'),
        Inside('green', 'blue bin'),
    )

    def build(self, spots, rng):
        out = []
        for name, label, shape, size, rgba, half in _ITEMS:
            x, y = np.array(spots[name]) + rng.uniform(-0.005, 0.005, 2)
            out.append(
                ObjectSpec(
                    name,
                    label,
                    shape,
                    size,
                    rgba,
                    (float(x), float(y), half),
                    yaw=float(rng.uniform(-0.3, 0.3)),
                )
            )
        x, y = np.array(spots['bin']) + rng.uniform(-0.005, 0.005, 2)
        out.append(
            ObjectSpec(
                'bin',
                'blue bin',
                'bowl',
                BIN,
                (0.15, 0.3, 0.85, 1.0),
                (float(x), float(y), 0.0),
                mass=0.4,
            )
        )
        return out

    def check(self, world: WorldSnapshot) -> Outcome:
        problems, cleared = [], 0
        rim = world.objects['bin'].position[2] + BIN[1]  # the bowl's origin is its bottom
        for name, label, _, _, _, half in _ITEMS:
            wrong = self.in_container(world, name, 'bin', BIN[0] - BIN[2], half)
            bottom = float(world.objects[name].position[2] - half)
            if bottom > rim:
                wrong.append(
                    f'the {label} is not down in the bin (its bottom {(bottom - rim) * 100:.1f} '
                    'cm above the rim)'
                )
            problems += wrong
            cleared += not wrong
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.25 * cleared + 0.25 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, 'all three objects are in the bin')


TASK = ClearTable  # this module is a bench task plugin (harness_bench.tasks)
