"""Rebuild a tower elsewhere in its order: the order is in view only until the tower comes apart."""

import itertools

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Raised, Released

TOLERANCE = np.array([0.025, 0.025, 0.012])  # stack_blocks_three's
_RGBA = {
    'red': (0.85, 0.15, 0.1, 1.0),
    'green': (0.15, 0.7, 0.2, 1.0),
    'blue': (0.15, 0.3, 0.85, 1.0),
}
_ORDERS = list(itertools.permutations(_RGBA))  # bottom to top


class RebuildTower(Task):
    name = 'rebuild_tower'
    kind = 'stack'
    category = 'memory'
    step_limit = 5000
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    # The tower and the zone within one arm's reach, its top block and the new tower's too.
    fixed = (
        {'tower': (-0.22, 0.02), 'zone': (-0.08, 0.0)},
        {'tower': (0.16, 0.05), 'zone': (0.22, -0.1)},
        {'tower': (-0.1, -0.04), 'zone': (-0.26, 0.02)},
    )
    regions = {
        'tower': Region((-0.32, -0.08), (-0.08, 0.08), 0.03, 'left', 0.1),
        'zone': Region((-0.34, -0.04), (-0.1, 0.08), 0.07, 'left', 0.1, 'tower', (0.14, 0.22)),
    }
    mirror = True
    instruction = (
        'Take the tower apart and build it again on the yellow zone, in the same order: the '
        'same block at the bottom, in the middle and on top.'
    )
    description = (
        'A tower of three 4 cm blocks (red, green and blue, in an order that changes with the '
        'layout) stands on the table; a 12 cm yellow square is drawn on the table beside it. '
        'Success: the bottom block of the start stands on the square (its centre within 4 cm '
        "of the square's in x and y), the start's middle block on it and the top block on "
        'that (each offset within 2.5 cm in x and y, 1.2 cm in height), all three were '
        'grasped, every gripper that holds nothing is open and both arms are home. Once the '
        'tower comes apart its order is no longer in view.'
    )
    HALF = 0.02
    ZONE_HALF = 0.06

    # The order is the layout's and the instruction does not say it (the check reads it): the
    # verifier sees the blocks let go and one of them standing on two others, 8 cm up.
    goal = (Released(), Raised('block', 0.075))

    def build(self, spots, rng):
        self.order = _ORDERS[int(rng.integers(len(_ORDERS)))]
        tx, ty = np.array(spots['tower']) + rng.uniform(-0.005, 0.005, 2)
        zx, zy = np.array(spots['zone']) + rng.uniform(-0.005, 0.005, 2)
        out, yaw = [], rng.uniform(-0.3, 0.3)
        for level, colour in enumerate(self.order):
            x, y = np.array([tx, ty]) + rng.uniform(-0.002, 0.002, 2)
            out.append(
                ObjectSpec(
                    f'{colour}_block',
                    f'{colour} block',
                    'box',
                    (self.HALF,) * 3,
                    _RGBA[colour],
                    (float(x), float(y), self.HALF * (2 * level + 1)),
                    yaw=float(yaw + rng.uniform(-0.08, 0.08)),  # stacked by hand
                )
            )
        out.append(
            ObjectSpec(
                'zone',
                'yellow zone',
                'box',
                (self.ZONE_HALF, self.ZONE_HALF, 0.0005),
                (0.95, 0.8, 0.1, 1.0),
                (float(zx), float(zy), 0.0005),
                movable=False,
                collide=False,
            )
        )
        return out

    def check(self, world: WorldSnapshot) -> Outcome:
        problems, placed = [], 0
        bottom, zone = world.objects[f'{self.order[0]}_block'], world.objects['zone']
        off = np.abs(bottom.position[:2] - zone.position[:2])
        if np.any(off > self.ZONE_HALF - self.HALF):
            problems.append(
                f'the {self.order[0]} block is ({off[0] * 100:.1f}, {off[1] * 100:.1f}) cm '
                f'from the zone centre (on it means within '
                f'{(self.ZONE_HALF - self.HALF) * 100:.0f} cm in x and y)'
            )
        elif bottom.position[2] - self.HALF > world.table_top_z + 0.01:
            problems.append(f'the {self.order[0]} block is not on the table')
        else:
            placed += 1
        for lower, upper in zip(self.order, self.order[1:], strict=False):
            want = world.objects[f'{lower}_block'].position + np.array([0.0, 0.0, 2 * self.HALF])
            error = np.abs(world.objects[f'{upper}_block'].position - want)
            if np.any(error > TOLERANCE):
                problems.append(
                    f'the {upper} block is off by ({error[0] * 100:.1f}, {error[1] * 100:.1f}, '
                    f'{error[2] * 100:.1f}) cm from on top of the {lower} block (tolerance '
                    f'2.5, 2.5, 1.2 cm)'
                )
            else:
                placed += 1
        for colour in self.order:
            if f'{colour}_block' not in world.grasped:
                problems.append(f'the {colour} block was never grasped')
            if self.held_by(world, f'{colour}_block'):
                problems.append(f'the {colour} block is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.25 * placed + 0.25 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(
            True, 1.0, f'the tower stands on the zone again: {", ".join(self.order)}, bottom to top'
        )


TASK = RebuildTower  # this module is a bench task plugin (harness_bench.tasks)
