"""Pick the object a picture shows: the instruction does not name it."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Holding

LIFT = 0.10
# name, shape, size, colour: a cube, a cylinder and a bar, told apart by colour and shape
_OBJECTS = (
    ('cube', 'box', (0.02, 0.02, 0.02), (0.85, 0.12, 0.1, 1.0)),
    ('cylinder', 'cylinder', (0.02, 0.03, 0.0), (0.12, 0.3, 0.85, 1.0)),
    ('bar', 'box', (0.015, 0.045, 0.015), (0.95, 0.8, 0.1, 1.0)),
)
_HALF_HEIGHT = {
    name: size[1] if shape == 'cylinder' else size[2] for name, shape, size, _ in _OBJECTS
}


class PickPictured(Task):
    name = 'pick_pictured'
    kind = 'pick_by_picture'
    category = 'generalization'
    step_limit = 1000
    layouts = 3
    fixed = (
        {'cube': (-0.22, 0.0), 'cylinder': (-0.08, 0.07), 'bar': (0.06, -0.01)},
        {'cube': (0.04, 0.06), 'cylinder': (-0.2, -0.02), 'bar': (-0.08, 0.02)},
        {'cube': (-0.1, -0.03), 'cylinder': (0.08, 0.02), 'bar': (-0.24, 0.06)},
    )
    regions = {name: Region((-0.28, 0.12), (-0.06, 0.1), 0.05) for name, *_ in _OBJECTS}
    instruction = (
        'Pick up the object shown in the task picture and hold it at least 10 cm above the table.'
    )
    description = (
        'A red cube (4 cm), a blue cylinder (4 cm across, 6 cm tall) and a yellow bar (9 cm '
        'long) stand on the table. The task picture (the first image; look("task_picture") in a '
        'program) shows one of them, cut out of the head camera. Success: that object is held '
        'with its bottom at least 10 cm above the table, and nothing else is held.'
    )
    picture = 'cube'  # build picks the object of the layout

    goal = (Holding('', LIFT),)

    def build(self, spots, rng):
        self.picture = _OBJECTS[int(rng.integers(len(_OBJECTS)))][0]
        out = []
        for name, shape, size, rgba in _OBJECTS:
            x, y = np.array(spots[name]) + rng.uniform(-0.005, 0.005, 2)
            label = {'cube': 'red cube', 'cylinder': 'blue cylinder', 'bar': 'yellow bar'}[name]
            out.append(
                ObjectSpec(
                    name,
                    label,
                    shape,
                    size,
                    rgba,
                    (float(x), float(y), _HALF_HEIGHT[name]),
                    yaw=float(rng.uniform(-0.3, 0.3)),
                )
            )
        return out

    def check(self, world: WorldSnapshot) -> Outcome:
        target = world.objects[self.picture]
        height = float(target.position[2] - _HALF_HEIGHT[self.picture] - world.table_top_z)
        arm = self.held_by(world, self.picture)
        others = [n for n in world.objects if n != self.picture and self.held_by(world, n)]
        problems = []
        if others:
            problems.append(f'the wrong object is held ({", ".join(others)})')
        if arm is None:
            problems.append(f'the pictured object ({target.label}) is not held')
        elif height < LIFT:
            problems.append(
                f'the {target.label} is only {height * 100:.1f} cm above the table '
                f'(needs {LIFT * 100:.0f} cm)'
            )
        score = float(np.clip(height / LIFT, 0, 1)) * (arm is not None) * (not others)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, f'the {arm} gripper holds the {target.label}, as pictured')


TASK = PickPictured  # this module is a bench task plugin (harness_bench.tasks)
