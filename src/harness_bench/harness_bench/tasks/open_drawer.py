"""Open a drawer: an articulated object, pulled along its slide by its handle."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Apart, Released

CABINET = (0.1, 0.1, 0.06)  # half extents: 20 cm wide and deep, 12 cm tall
DRAWER = (0.088, 0.093, 0.048)  # half extents, inside the cabinet, its front flush with it
DRAWER_Y = -0.005  # the drawer's centre from the cabinet's, along y
HANDLE = (0.01, 0.025, 0.01)  # half extents: 2 cm wide, sticking out 5 cm, 2 cm tall
HANDLE_Y = -(DRAWER[1] + HANDLE[1])  # the handle's centre from the drawer's
TRAVEL = 0.15  # how far the drawer slides out
OPEN = 0.10  # open means pulled out at least this far
WHITE = (0.9, 0.9, 0.88, 1.0)
BLUE = (0.15, 0.3, 0.85, 1.0)
GREEN = (0.2, 0.6, 0.3, 1.0)
RED = (0.85, 0.12, 0.1, 1.0)


def cabinet_spec(x: float, y: float, label: str = 'white cabinet', rgba=WHITE) -> ObjectSpec:
    """The cabinet (the drawer tasks' articulated piece of furniture) fixed at x, y."""
    return ObjectSpec(
        'cabinet', label, 'cabinet', CABINET, rgba, (float(x), float(y), CABINET[2]),
        mass=2.0, movable=False,
    )  # fmt: skip


def drawer_spec(
    y: float = DRAWER_Y,
    slide: tuple[float, float, float] = (0.0, -TRAVEL, 0.0),
    shape: str = 'box',
    size: tuple[float, float, float] = DRAWER,
    z: float = 0.0,
) -> ObjectSpec:
    """The green drawer in the cabinet, its centre at (0, y, z) from the cabinet's, sliding
    along `slide`."""
    return ObjectSpec(
        'drawer', 'green drawer', shape, size, GREEN, (0.0, y, z),
        mass=0.3, parent='cabinet', slide=slide,
    )  # fmt: skip


def handle_spec(
    y: float = HANDLE_Y, z: float = 0.0, label: str = 'red handle', rgba=RED
) -> ObjectSpec:
    """The handle on the drawer's front, its centre at (0, y, z) from the drawer's."""
    return ObjectSpec(
        'handle', label, 'box', HANDLE, rgba, (0.0, y, z),
        mass=0.02, movable=False, parent='drawer',
    )  # fmt: skip


class OpenDrawer(Task):
    name = 'open_drawer'
    kind = 'open'
    category = 'open'
    step_limit = 1250
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = ({'cabinet': (-0.2, 0.08)}, {'cabinet': (0.18, 0.1)}, {'cabinet': (-0.14, 0.04)})
    # The handle within reach of the arm on the cabinet's side, closed and pulled out.
    _handle = DRAWER_Y + HANDLE_Y
    regions = {
        'cabinet': Region(
            (-0.3, -0.08),
            (0.02, 0.12),
            0.14,
            'left',
            CABINET[2],
            touch=((0.0, _handle), (0.0, _handle - OPEN)),
        )
    }
    mirror = True
    instruction = 'Open the drawer: pull it out at least 10 cm by its red handle.'
    description = (
        'A white cabinet (20 cm wide and deep, 12 cm tall) is fixed to the table, its open '
        'side toward the robot; a green drawer fills it and slides out toward the robot by up '
        'to 15 cm. A red handle, 2 cm wide and 2 cm tall, sticks out 5 cm from the middle of '
        "the drawer's front. Success: the drawer is pulled out at least 10 cm, nothing holds "
        'the handle, every gripper that holds nothing is open and both arms are home.'
    )

    # Closed, the handle's centre is 12.3 cm from the cabinet's; open, 10 cm more.
    goal = (Released(), Apart('red handle', 'white cabinet', 0.2))

    def build(self, spots, rng):
        x, y = np.array(spots['cabinet']) + rng.uniform(-0.005, 0.005, 2)
        self.closed = np.array([x, y + DRAWER_Y])  # the drawer's centre, closed (world xy)
        return [cabinet_spec(x, y), drawer_spec(), handle_spec()]

    def check(self, world: WorldSnapshot) -> Outcome:
        drawer = world.objects['drawer']
        pulled = float(np.linalg.norm(drawer.position[:2] - self.closed))
        problems = []
        if pulled < OPEN:
            problems.append(
                f'the drawer is out {pulled * 100:.1f} cm (open means at least {OPEN * 100:.0f} cm)'
            )
        if self.held_by(world, 'handle'):
            problems.append('the handle is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.5 * min(1.0, pulled / OPEN) + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, f'the drawer is open {pulled * 100:.1f} cm')


TASK = OpenDrawer  # this module is a bench task plugin (harness_bench.tasks)
