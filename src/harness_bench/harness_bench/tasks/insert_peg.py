"""Insert a peg into the hole of a block: 4 mm of clearance on each side."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Inside, Released

PEG = (0.012, 0.04)  # radius, half height: 2.4 cm across, 8 cm tall
SOCKET = (0.04, 0.016, 0.025)  # outer half width, hole half width, half height
DEPTH = 0.02  # how deep the peg's bottom must be below the socket's top


class InsertPeg(Task):
    name = 'insert_peg'
    kind = 'insert'
    category = 'precision'
    step_limit = 1250
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {'peg': (-0.2, 0.06), 'socket': (-0.12, -0.08)},
        {'peg': (0.18, 0.08), 'socket': (0.1, -0.06)},
        {'peg': (-0.1, 0.1), 'socket': (-0.22, -0.06)},
    )
    # The socket nearer the robot than the peg, within reach of the arm that picks the peg
    # (mirrored: the other arm): the tool can then keep over the hole the pitch it picked the
    # peg with. Both within a near-vertical grasp: a tall peg grasped at a shallow pitch tilts
    # in the fingers as it is lifted.
    regions = {
        'peg': Region((-0.3, -0.06), (0.02, 0.12), 0.02, 'left', 0.04, pitch=75.0),
        'socket': Region((-0.3, -0.04), (-0.14, -0.04), 0.06, 'left', 0.1, pitch=75.0),
    }
    mirror = True
    instruction = 'Insert the red peg into the hole of the yellow block.'
    description = (
        'A red peg (2.4 cm across, 8 cm tall) stands on the table beside a yellow block '
        '(8 cm square, 5 cm tall) fixed to the table, with a 3.2 cm square hole through it. '
        f'Success: the peg stands in the hole, its bottom at least {DEPTH * 100:.0f} cm below '
        "the block's top, let go; every gripper that holds nothing is open and both arms are home."
    )

    goal = (Released(), Inside('red peg', 'yellow block'))
    socket = SOCKET  # its outer half width, hole half width, half height
    centred = SOCKET[1]  # how far (xy) the peg's centre may be from the hole's centre
    done = 'the peg is in the hole'

    def build(self, spots, rng):
        (px, py), (sx, sy) = (
            np.array(spots[k]) + rng.uniform(-0.005, 0.005, 2) for k in ('peg', 'socket')
        )
        return [
            ObjectSpec(
                'peg',
                'red peg',
                'cylinder',
                (PEG[0], PEG[1], 0.0),
                (0.85, 0.12, 0.1, 1.0),
                (float(px), float(py), PEG[1]),
                mass=0.04,
            ),
            ObjectSpec(
                'socket',
                'yellow block',
                'socket',
                self.socket,
                (0.95, 0.8, 0.1, 1.0),
                (float(sx), float(sy), self.socket[2]),
                yaw=float(rng.uniform(-0.3, 0.3)),
                mass=0.3,
                movable=False,
            ),
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        peg, socket = world.objects['peg'], world.objects['socket']
        offset = float(np.linalg.norm(peg.position[:2] - socket.position[:2]))
        top = socket.position[2] + self.socket[2]
        depth = float(top - (peg.position[2] - PEG[1]))
        problems = []
        inside = offset < self.centred and depth >= DEPTH
        if not inside:
            problems.append(
                f'the peg is {offset * 100:.1f} cm from the centre of the hole and its bottom '
                f'{depth * 100:.1f} cm below the top of the block (inside means under '
                f'{self.centred * 100:.1f} cm and at least {DEPTH * 100:.0f} cm deep)'
            )
        if self.held_by(world, 'peg'):
            problems.append('the peg is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.5 * inside + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, f'{self.done}, {depth * 100:.1f} cm deep')


TASK = InsertPeg  # this module is a bench task plugin (harness_bench.tasks)
