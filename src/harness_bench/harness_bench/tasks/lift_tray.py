"""Lift a tray too wide for one gripper with both arms, level."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Holding, Raised

HALF = (0.06, 0.16, 0.012)  # half extents with the handles: 12 cm wide, 32 cm long
HANDLE_Y = HALF[1] - 0.035  # a handle's centre from the tray's centre, along its length
LIFT = 0.05
MAX_TILT_DEG = 10.0


class LiftTray(Task):
    name = 'lift_tray'
    kind = 'bimanual_lift'
    category = 'precision'
    step_limit = 2000
    layouts = 3
    fixed = ({'tray': (0.0, -0.08)}, {'tray': (-0.03, -0.06)}, {'tray': (0.03, -0.1)})
    # Each handle within reach of both arms (either may take either end).
    regions = {
        'tray': Region(
            (-0.05, 0.05),
            (-0.12, -0.05),
            HALF[1],
            'both',
            0.012,
            touch=((0.0, -HANDLE_Y), (0.0, HANDLE_Y)),
        )
    }
    instruction = 'Lift the purple tray with both arms, level, at least 5 cm above the table.'
    description = (
        'A purple tray, 12 cm wide and 32 cm long, lies on the table pointing away from the '
        'robot, with a 4 cm wide, 7 cm long handle at each end; it is too wide for one gripper '
        'anywhere but at a handle. Success: both grippers hold the tray, its bottom at least '
        f'5 cm above the table, tilted less than {MAX_TILT_DEG:.0f} degrees.'
    )

    goal = (Holding('left', LIFT), Holding('right', LIFT), Raised('purple tray', LIFT))

    def build(self, spots, rng):
        x, y = np.array(spots['tray']) + rng.uniform(-0.005, 0.005, 2)
        return [
            ObjectSpec(
                'tray',
                'purple tray',
                'tray',
                HALF,
                (0.55, 0.25, 0.75, 1.0),
                (float(x), float(y), HALF[2]),
                yaw=float(rng.uniform(-0.1, 0.1)),
                mass=0.4,
            )
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        tray = world.objects['tray']
        height = float(tray.position[2] - HALF[2] - world.table_top_z)
        holders = [arm for arm, a in world.arms.items() if 'tray' in a.holding]
        w, x, y, z = tray.quat
        up = np.array([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)])
        tilt = float(np.degrees(np.arccos(np.clip(up[2], -1.0, 1.0))))
        problems = []
        if len(holders) < 2:
            problems.append(f'the tray is held by {holders or "nothing"}, not by both arms')
        if height < LIFT:
            problems.append(f'the tray is only {height * 100:.1f} cm above the table')
        if tilt > MAX_TILT_DEG:
            problems.append(f'the tray is tilted {tilt:.0f} degrees')
        score = 0.25 * len(holders) + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(
            True,
            1.0,
            f'both arms hold the tray {height * 100:.1f} cm above the table, tilted {tilt:.0f} deg',
        )


TASK = LiftTray  # this module is a bench task plugin (harness_bench.tasks)
