"""Open a box: an articulated object, its lid turned up on its hinge by a handle on its free edge
until it stands past upright and stays open."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Raised, Released

BOX = (0.08, 0.06, 0.035)  # half extents: 16 cm wide, 12 cm deep, 7 cm tall
LID = (0.08, 0.06, 0.006)  # half extents: as wide and deep as the box, 1.2 cm thick
HANDLE = (0.01, 0.02, 0.006)  # half extents: 2 cm wide, sticking out 4 cm from the lid's front
HANDLE_Y = -(LID[1] + HANDLE[1])  # the handle's centre from the lid's, along y
LIMIT = np.radians(110.0)  # the lid turns up to here (past upright, it rests on its stop)
OPEN = np.radians(60.0)  # open means turned up at least this far


class OpenBoxLid(Task):
    name = 'open_box_lid'
    kind = 'open'
    category = 'open'
    step_limit = 1250
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = ({'box': (-0.2, -0.05)}, {'box': (0.17, -0.02)}, {'box': (-0.13, -0.08)})
    # The handle within reach of the arm on the box's side closed, and the line its grasp
    # swings up along (over the hinge, at the back).
    regions = {
        'box': Region(
            (-0.28, -0.08),
            (-0.1, 0.0),
            0.12,
            'left',
            2 * BOX[2] + LID[2],
            touch=((0.0, HANDLE_Y), (0.0, 0.0), (0.0, BOX[1])),
        )
    }
    mirror = True
    instruction = (
        'Open the box: lift its lid by the red handle on its front edge until it stays open.'
    )
    description = (
        'A blue box (16 cm wide, 12 cm deep, 7 cm tall) is fixed to the table; its green lid '
        'turns up on a hinge along its back top edge, as far as 110 degrees (past upright it '
        'rests open; below upright it falls shut). A red handle, 2 cm wide and 1.2 cm thick, '
        "sticks out 4 cm from the middle of the lid's front edge. Success: the lid is turned up "
        'at least 60 degrees, nothing holds the handle, every gripper that holds nothing is '
        'open and both arms are home.'
    )
    # Shut, the handle lies 7 cm over the table; open on its stop, it stands 19 cm over it.
    goal = (Released(), Raised('red handle', 0.14))

    def build(self, spots, rng):
        x, y = np.array(spots['box']) + rng.uniform(-0.005, 0.005, 2)
        return [
            ObjectSpec(
                'box',
                'blue box',
                'box',
                BOX,
                (0.15, 0.3, 0.85, 1.0),
                (float(x), float(y), BOX[2]),
                mass=1.0,
                movable=False,
            ),
            # On the box, its hinge along the box's back top edge: about -x it turns up.
            ObjectSpec(
                'lid',
                'green lid',
                'box',
                LID,
                (0.2, 0.6, 0.3, 1.0),
                (0.0, 0.0, BOX[2] + LID[2]),
                mass=0.1,
                parent='box',
                hinge=((-1.0, 0.0, 0.0), (0.0, BOX[1], BOX[2]), (0.0, float(LIMIT))),
            ),
            ObjectSpec(
                'handle',
                'red handle',
                'box',
                HANDLE,
                (0.85, 0.12, 0.1, 1.0),
                (0.0, HANDLE_Y, 0.0),
                mass=0.01,
                movable=False,
                parent='lid',
            ),
        ]

    @staticmethod
    def turned(world: WorldSnapshot) -> float:
        """How far the lid is turned up (rad): the tilt of its top face from the box's."""
        w, x, y, z = world.objects['lid'].quat
        up = 1.0 - 2.0 * (x * x + y * y)  # the world z part of the lid's own z axis
        return float(np.arccos(np.clip(up, -1.0, 1.0)))

    def check(self, world: WorldSnapshot) -> Outcome:
        angle = self.turned(world)
        problems = []
        if angle < OPEN:
            problems.append(
                f'the lid is turned up {np.degrees(angle):.0f} degrees (open means at least '
                f'{np.degrees(OPEN):.0f})'
            )
        if self.held_by(world, 'handle'):
            problems.append('the handle is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.5 * min(1.0, angle / OPEN) + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, f'the lid is open, turned up {np.degrees(angle):.0f} degrees')


TASK = OpenBoxLid  # this module is a bench task plugin (harness_bench.tasks)
