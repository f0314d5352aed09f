"""Stack three small cubes (2.5 cm) into a tower: the tolerances scale with the size."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import On, Released

HALF = 0.0125  # 2.5 cm cubes
# Each cube on the one below within these offsets (x, y, z): the stacking tolerances
# (2.5, 2.5, 1.2 cm for 4 cm blocks) scaled down to the size, rounded.
TOLERANCE = np.array([0.015, 0.015, 0.008])
_CUBES = (
    ('base_cube', 'red cube', (0.85, 0.15, 0.1, 1.0)),
    ('middle_cube', 'green cube', (0.15, 0.7, 0.2, 1.0)),
    ('top_cube', 'blue cube', (0.15, 0.3, 0.85, 1.0)),
)


class StackSmallParts(Task):
    name = 'stack_small_parts'
    kind = 'stack'
    category = 'precision'
    step_limit = 2500
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    # All within the left or all within the right arm's reach.
    fixed = (
        {'base_cube': (-0.2, 0.0), 'middle_cube': (-0.08, 0.07), 'top_cube': (-0.07, -0.04)},
        {'base_cube': (0.2, 0.03), 'middle_cube': (0.08, 0.08), 'top_cube': (0.09, -0.03)},
        {'base_cube': (-0.14, 0.07), 'middle_cube': (-0.24, -0.02), 'top_cube': (-0.04, 0.0)},
    )
    regions = {
        'base_cube': Region((-0.32, -0.06), (-0.08, 0.12), 0.02, 'left', HALF),
        'middle_cube': Region(
            (-0.34, -0.02), (-0.10, 0.14), 0.02, 'left', HALF, 'base_cube', (0.08, 0.2)
        ),
        'top_cube': Region(
            (-0.34, -0.02), (-0.10, 0.14), 0.02, 'left', HALF, 'base_cube', (0.08, 0.2)
        ),
    }
    mirror = True
    instruction = (
        'Stack the small cubes into a tower: the green cube on the red cube, then the blue '
        'cube on top.'
    )
    description = (
        'Three small 2.5 cm cubes, red, green and blue, stand on the table. Success: green '
        'rests on red and blue on green (each offset within 1.5 cm in x and y, 0.8 cm in '
        'height), every gripper that holds nothing is open and both arms are home.'
    )

    goal = (Released(), On('green cube', 'red cube'), On('blue cube', 'green cube'))

    def build(self, spots, rng):
        out = []
        for name, label, rgba in _CUBES:
            x, y = np.array(spots[name]) + rng.uniform(-0.005, 0.005, 2)
            out.append(
                ObjectSpec(
                    name,
                    label,
                    'box',
                    (HALF,) * 3,
                    rgba,
                    (float(x), float(y), HALF),
                    yaw=float(rng.uniform(-0.3, 0.3)),
                    mass=0.02,
                )
            )
        return out

    def check(self, world: WorldSnapshot) -> Outcome:
        problems, stacked = [], 0
        for (lower, lower_label, _), (upper, upper_label, _) in zip(
            _CUBES, _CUBES[1:], strict=False
        ):
            want = world.objects[lower].position + np.array([0.0, 0.0, 2 * HALF])
            error = np.abs(world.objects[upper].position - want)
            if np.any(error > TOLERANCE):
                problems.append(
                    f'the {upper_label} is off by ({error[0] * 100:.1f}, {error[1] * 100:.1f}, '
                    f'{error[2] * 100:.1f}) cm from on top of the {lower_label} (tolerance '
                    f'1.5, 1.5, 0.8 cm)'
                )
            else:
                stacked += 1
            if self.held_by(world, upper):
                problems.append(f'the {upper_label} is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.35 * stacked + 0.3 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, 'the small cubes stand as a tower: red, green, blue')


TASK = StackSmallParts  # this module is a bench task plugin (harness_bench.tasks)
