"""Put a cube away in a drawer: open the drawer by its handle, put the cube in, close it again
(an articulated object used twice, with a pick and place between)."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.tasks.open_drawer import (
    BLUE,
    CABINET,
    DRAWER,
    DRAWER_Y,
    HANDLE_Y,
    cabinet_spec,
    drawer_spec,
    handle_spec,
)
from harness_bench.verifier import Absent, Inside, Released

WALL = 0.01  # the drawer's walls and floor
CUBE = 0.02  # the cube's half size
SHUT = 0.01  # closed means within this of flush


class PutInDrawer(Task):
    name = 'put_in_drawer'
    kind = 'put_away'  # no policy of the catalogue learned it: programs only
    category = 'open'
    step_limit = 2500
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {'cabinet': (-0.22, 0.08), 'cube': (-0.02, -0.05)},
        {'cabinet': (0.2, 0.1), 'cube': (0.0, -0.02)},
        {'cabinet': (-0.16, 0.04), 'cube': (0.04, -0.1)},
    )
    # The handle within reach of the arm on the cabinet's side, closed and pulled out (the
    # cube goes in between); the cube beside the drawer's path, toward the middle of the table,
    # within reach of the same arm.
    _handle = DRAWER_Y + HANDLE_Y
    regions = {
        'cabinet': Region(
            (-0.3, -0.12),
            (0.02, 0.12),
            0.14,
            'left',
            CABINET[2],
            touch=((0.0, _handle), (0.0, _handle - 0.14)),
        ),
        'cube': Region(
            (-0.25, 0.06),
            (-0.2, 0.05),
            0.03,
            'left',
            CUBE,
            near='cabinet',
            distance=(0.22, 0.27),
            bearing=(np.radians(-40.0), np.radians(10.0)),
        ),
    }
    mirror = True
    instruction = (
        'Put the yellow cube away in the drawer: open the drawer by its red handle, put the '
        'cube inside and close the drawer again.'
    )
    description = (
        'A blue cabinet (20 cm wide and deep, 12 cm tall) is fixed to the table, its open side '
        'toward the robot; a green open-top drawer (8.6 cm deep inside) fills it, closed, and '
        'slides out toward the robot by up to 15 cm. A red handle, 2 cm wide and 2 cm tall, '
        "sticks out 5 cm from the middle of the drawer's front. A yellow 4 cm cube stands "
        'beside the cabinet. Success: the cube lies inside the drawer, the drawer is within 1 '
        'cm of closed, nothing holds the cube or the handle, every gripper that holds nothing '
        'is open and both arms are home.'
    )
    # Closed, the cameras see only the drawer's front, within the cabinet's footprint, and no
    # yellow cube: it is out of sight inside (the ground truth checks where it is).
    goal = (Released(), Inside('green', 'biggest blue'), Absent('yellow'))

    def build(self, spots, rng):
        x, y = np.array(spots['cabinet']) + rng.uniform(-0.005, 0.005, 2)
        cx, cy = np.array(spots['cube']) + rng.uniform(-0.005, 0.005, 2)
        self.closed = np.array([x, y + DRAWER_Y])  # the drawer's centre, closed (world xy)
        return [
            cabinet_spec(x, y, 'blue cabinet', BLUE),
            drawer_spec(shape='bin'),
            handle_spec(),
            ObjectSpec(
                'cube',
                'yellow cube',
                'box',
                (CUBE,) * 3,
                (0.95, 0.8, 0.1, 1.0),
                (float(cx), float(cy), CUBE),
                yaw=float(rng.uniform(-0.3, 0.3)),
            ),
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        drawer, cube = world.objects['drawer'], world.objects['cube']
        out = float(np.linalg.norm(drawer.position[:2] - self.closed))
        # The cube's centre over the drawer's floor (its walls and the cube's half size in)
        # and below its rim.
        off = np.abs(cube.position[:2] - drawer.position[:2])
        room = np.array(DRAWER[:2]) - WALL - CUBE * 0.5
        rim = drawer.position[2] + DRAWER[2]
        problems = []
        if np.any(off > room) or cube.position[2] > rim:
            problems.append(
                f'the yellow cube is not in the drawer ({off[0] * 100:.1f}, {off[1] * 100:.1f} '
                f'cm off its middle, {(cube.position[2] - rim) * 100:+.1f} cm from its rim)'
            )
        if out > SHUT:
            problems.append(
                f'the drawer is still out {out * 100:.1f} cm (closed means within '
                f'{SHUT * 100:.0f} cm)'
            )
        for name, label in (('cube', 'cube'), ('handle', 'handle')):
            if self.held_by(world, name):
                problems.append(f'the {label} is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        inside = not (np.any(off > room) or cube.position[2] > rim)
        score = 0.25 * inside + 0.25 * (out <= SHUT) + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(
            True, 1.0, f'the cube is in the drawer, closed ({out * 100:.1f} cm from flush)'
        )


TASK = PutInDrawer  # this module is a bench task plugin (harness_bench.tasks)
