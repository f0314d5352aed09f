"""Fetch a cube put away in a drawer: no camera sees it until the drawer is pulled out."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.tasks.open_drawer import (
    BLUE,
    CABINET,
    DRAWER_Y,
    HANDLE,
    cabinet_spec,
    drawer_spec,
    handle_spec,
)
from harness_bench.verifier import Inside, Released

DRAWER = (0.088, 0.093, 0.02)  # half extents: a 4 cm slab on the cabinet's floor
DRAWER_Z = -CABINET[2] + 0.01 + DRAWER[2] + 0.001  # resting just above the cabinet's floor
# The drawer's front panel, up to 3 mm under the cabinet's roof: no camera sees past it.
FRONT = (DRAWER[0], 0.005, (2 * CABINET[2] - 0.02 - 0.001 - 0.003) / 2)  # half extents
FRONT_Y = -DRAWER[1] + FRONT[1]  # its centre from the drawer's
FRONT_Z = -DRAWER[2] + FRONT[2]  # its bottom level with the drawer's
HANDLE_Y = -(DRAWER[1] + HANDLE[1])  # the handle's centre from the drawer's
HANDLE_Z = FRONT_Z  # on the middle of the front panel
CUBE_IN = 0.07  # the cube's centre this far behind the cabinet's front, on the drawer
HALF = 0.02  # the cube's half size
ZONE_HALF = 0.06


class FetchFromDrawer(Task):
    name = 'fetch_from_drawer'
    kind = 'open'
    category = 'memory'
    step_limit = 2000
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {'cabinet': (-0.22, 0.08), 'zone': (0.0, -0.08)},
        {'cabinet': (0.2, 0.1), 'zone': (-0.02, -0.04)},
        {'cabinet': (-0.16, 0.06), 'zone': (0.06, -0.1)},
    )
    # The handle within reach of the arm on the cabinet's side, closed and pulled out, the
    # cube where the drawer brings it, and the zone beside the cabinet, clear of the drawer.
    _handle = DRAWER_Y + HANDLE_Y
    _cube = -CABINET[1] + CUBE_IN - 0.13
    regions = {
        'cabinet': Region(
            (-0.3, -0.12),
            (0.02, 0.12),
            0.14,
            'left',
            CABINET[2],
            touch=((0.0, _handle), (0.0, _handle - 0.13), (0.0, _cube)),
        ),
        'zone': Region((-0.08, 0.08), (-0.14, 0.0), 0.06, 'left', 0.04),
    }
    mirror = True
    instruction = (
        'A red cube was put away in the drawer of the blue cabinet. Take it out and put it '
        'on the yellow zone.'
    )
    description = (
        'A blue cabinet (20 cm wide and deep, 12 cm tall, open toward the robot) is fixed to '
        'the table; a green drawer (a 4 cm slab on its floor, its front panel as tall as the '
        'cabinet inside) slides out toward the robot by up to 15 cm by an orange handle on '
        'that panel. A 4 cm red cube lies on the drawer inside the cabinet, where no camera '
        'sees it (the roof and the panel hide it); a 12 cm yellow square is drawn on the table '
        'beside the cabinet. Success: the cube stands on the table with its centre inside the '
        'square, it was grasped, every gripper that holds nothing is open and both arms are '
        'home.'
    )

    goal = (Released(), Inside('red cube', 'yellow'))

    def build(self, spots, rng):
        x, y = np.array(spots['cabinet']) + rng.uniform(-0.005, 0.005, 2)
        zx, zy = np.array(spots['zone']) + rng.uniform(-0.005, 0.005, 2)
        cx, cy = np.array([x, y - CABINET[1] + CUBE_IN]) + rng.uniform(-0.005, 0.005, 2)
        on_drawer = CABINET[2] + DRAWER_Z + DRAWER[2] + HALF + 0.001  # above the table top
        return [
            cabinet_spec(x, y, 'blue cabinet', BLUE),
            drawer_spec(size=DRAWER, z=DRAWER_Z),
            ObjectSpec(
                'front',
                'green drawer front',
                'box',
                FRONT,
                (0.2, 0.6, 0.3, 1.0),
                (0.0, FRONT_Y, FRONT_Z),
                mass=0.05,
                movable=False,
                parent='drawer',
            ),
            handle_spec(HANDLE_Y, HANDLE_Z, 'orange handle', (0.95, 0.5, 0.1, 1.0)),
            ObjectSpec(
                'cube',
                'red cube',
                'box',
                (HALF,) * 3,
                (0.85, 0.15, 0.1, 1.0),
                (float(cx), float(cy), on_drawer),
                yaw=float(rng.uniform(-0.3, 0.3)),
            ),
            ObjectSpec(
                'zone',
                'yellow zone',
                'box',
                (ZONE_HALF, ZONE_HALF, 0.0005),
                (0.95, 0.8, 0.1, 1.0),
                (float(zx), float(zy), 0.0005),
                movable=False,
                collide=False,
            ),
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        cube, zone = world.objects['cube'], world.objects['zone']
        off = np.abs(cube.position[:2] - zone.position[:2])
        problems = []
        inside = bool(np.all(off <= ZONE_HALF))
        if not inside:
            problems.append(
                f'the cube centre is ({off[0] * 100:.1f}, {off[1] * 100:.1f}) cm from the zone '
                f'centre (inside means within {ZONE_HALF * 100:.0f} cm in x and y)'
            )
        if cube.position[2] - HALF > world.table_top_z + 0.01:
            problems.append('the cube is not on the table')
        if 'cube' not in world.grasped:
            problems.append('the cube was never grasped')
        if self.held_by(world, 'cube'):
            problems.append('the cube is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.5 * (inside and 'cube' in world.grasped) + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, 'the cube was fetched from the drawer onto the zone')


TASK = FetchFromDrawer  # this module is a bench task plugin (harness_bench.tasks)
