"""Close a drawer: an articulated object that starts pulled out, pushed (or pulled by its handle)
back along its slide until it is flush with its cabinet."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import Outcome, Task, WorldSnapshot
from harness_bench.tasks.open_drawer import (
    BLUE,
    CABINET,
    DRAWER_Y,
    HANDLE_Y,
    cabinet_spec,
    drawer_spec,
    handle_spec,
)
from harness_bench.verifier import Inside, Released

PULLED = (0.08, 0.12)  # how far the drawer stands out at the start (m, drawn per layout)
SHUT = 0.01  # closed means within this of flush


class CloseDrawer(Task):
    name = 'close_drawer'
    kind = 'close'
    category = 'open'
    step_limit = 1250
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = ({'cabinet': (-0.2, 0.08)}, {'cabinet': (0.18, 0.1)}, {'cabinet': (-0.14, 0.04)})
    # The handle within reach of the arm on the cabinet's side, pulled out as far as it may
    # start and pushed home.
    _handle = DRAWER_Y + HANDLE_Y
    regions = {
        'cabinet': Region(
            (-0.3, -0.08),
            (0.02, 0.12),
            0.14,
            'left',
            CABINET[2],
            touch=((0.0, _handle), (0.0, _handle - PULLED[1])),
        )
    }
    mirror = True
    instruction = 'Close the drawer: push it all the way back into the cabinet.'
    description = (
        'A blue cabinet (20 cm wide and deep, 12 cm tall) is fixed to the table, its open side '
        'toward the robot; a green drawer in it stands pulled out toward the robot by 8 to 12 '
        'cm and slides back in until its front is flush with the cabinet. A red handle, 2 cm '
        "wide and 2 cm tall, sticks out 5 cm from the middle of the drawer's front. Success: "
        'the drawer is within 1 cm of closed, nothing holds the handle, every gripper that '
        'holds nothing is open and both arms are home.'
    )
    # Closed, the cameras see only the drawer's front, 10 cm from the cabinet's centre: within
    # its footprint (an open drawer's visible part lies 1 to 2 cm farther out for each cm).
    goal = (Released(), Inside('green', 'biggest blue'))

    def build(self, spots, rng):
        x, y = np.array(spots['cabinet']) + rng.uniform(-0.005, 0.005, 2)
        pulled = float(rng.uniform(*PULLED))
        self.closed = np.array([x, y + DRAWER_Y])  # the drawer's centre, closed (world xy)
        return [
            cabinet_spec(x, y, 'blue cabinet', BLUE),
            # Pulled out where it stands; it slides back toward the cabinet as far as closed.
            drawer_spec(DRAWER_Y - pulled, (0.0, pulled, 0.0)),
            handle_spec(),
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        drawer = world.objects['drawer']
        out = float(np.linalg.norm(drawer.position[:2] - self.closed))
        problems = []
        if out > SHUT:
            problems.append(
                f'the drawer is still out {out * 100:.1f} cm (closed means within '
                f'{SHUT * 100:.0f} cm)'
            )
        if self.held_by(world, 'handle'):
            problems.append('the handle is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        shut = max(0.0, 1.0 - max(0.0, out - SHUT) / PULLED[0])
        score = 0.5 * shut + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, f'the drawer is closed ({out * 100:.1f} cm from flush)')


TASK = CloseDrawer  # this module is a bench task plugin (harness_bench.tasks)
