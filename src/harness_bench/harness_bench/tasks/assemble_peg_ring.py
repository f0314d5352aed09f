"""A two-stage assembly: insert a peg into the hole of a fixed block, then slide a ring (a flat
block with a hole) down over the peg onto that block. The ring goes on only around a peg that
stands in the hole: stage two needs stage one."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Inside, On, Released

PEG = (0.012, 0.04)  # radius, half height: 2.4 cm across, 8 cm tall
SOCKET = (0.04, 0.016, 0.025)  # outer half width, hole half width, half height (5 cm tall)
RING = (0.026, 0.016, 0.01)  # 5.2 cm square, 3.2 cm hole, 2 cm tall: 4 mm around the peg
DEPTH = 0.02  # how deep the peg's bottom must be below the socket's top
RING_OFF = 0.012  # m (xy) the ring's centre may be from the peg's axis (its hole allows 4 mm
# around the peg, which may lean 4 mm in its own hole)
RESTING = 0.01  # m between the ring's bottom and the socket's top


class AssemblePegRing(Task):
    name = 'assemble_peg_ring'
    kind = 'assemble'  # no policy of the catalogue learned it: programs only
    category = 'long_horizon'
    step_limit = 1000  # the reference takes 460-500 env steps
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {'peg': (-0.2, 0.06), 'socket': (-0.12, -0.08), 'ring': (-0.3, -0.04)},
        {'peg': (0.18, 0.08), 'socket': (0.1, -0.06), 'ring': (0.28, -0.04)},
        {'peg': (-0.1, 0.1), 'socket': (-0.22, -0.06), 'ring': (-0.06, -0.04)},
    )
    # As insert_peg: the socket nearer the robot than the peg, both within a near-vertical
    # grasp of one arm (mirrored: the other), so the peg stays upright in the hand and the ring
    # comes down level around it. The ring anywhere on that arm's side.
    regions = {
        'peg': Region((-0.3, -0.06), (0.02, 0.12), 0.02, 'left', 0.04, pitch=75.0),
        'socket': Region((-0.3, -0.04), (-0.14, -0.04), 0.06, 'left', 0.1, pitch=75.0),
        'ring': Region((-0.36, -0.04), (-0.12, 0.14), 0.04, 'left', 0.01, pitch=75.0),
    }
    mirror = True
    instruction = (
        'Insert the red peg into the hole of the yellow block, then put the blue block (it has a '
        'hole too) down over the peg onto the yellow block.'
    )
    description = (
        'A red peg (2.4 cm across, 8 cm tall), a yellow block (8 cm square, 5 cm tall) fixed to '
        'the table with a 3.2 cm square hole through it, and a flat blue block (5.2 cm square, '
        '2 cm tall) with a 3.2 cm hole stand on the table. Success: the peg stands in the yellow '
        f"block's hole, its bottom at least {DEPTH * 100:.0f} cm below the block's top, and the "
        'blue block rests on the yellow one with the peg through its hole, both let go; every '
        'gripper that holds nothing is open and both arms are home.'
    )

    # The ring by its colour alone: seen into its hole from some views, it measures as a bowl.
    # The fixed block as the biggest yellow thing: with the ring on it, a strip of its top can
    # come out as a yellow bar of its own.
    goal = (Released(), On('blue', 'biggest yellow'), Inside('red peg', 'blue'))

    def build(self, spots, rng):
        (px, py), (sx, sy), (rx, ry) = (
            np.array(spots[k]) + rng.uniform(-0.005, 0.005, 2) for k in ('peg', 'socket', 'ring')
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
                SOCKET,
                (0.95, 0.8, 0.1, 1.0),
                (float(sx), float(sy), SOCKET[2]),
                yaw=float(rng.uniform(-0.3, 0.3)),
                mass=0.3,
                movable=False,
            ),
            ObjectSpec(
                'ring',
                'blue block',
                'socket',
                RING,
                (0.15, 0.3, 0.85, 1.0),
                (float(rx), float(ry), RING[2]),
                yaw=float(rng.uniform(-0.15, 0.15)),
                mass=0.03,
            ),
        ]

    def check(self, world: WorldSnapshot) -> Outcome:
        peg, socket, ring = (world.objects[k] for k in ('peg', 'socket', 'ring'))
        top = socket.position[2] + SOCKET[2]
        offset = float(np.linalg.norm(peg.position[:2] - socket.position[:2]))
        depth = float(top - (peg.position[2] - PEG[1]))
        problems = []
        inserted = offset < SOCKET[1] and depth >= DEPTH
        if not inserted:
            problems.append(
                f'the peg is {offset * 100:.1f} cm from the centre of the hole and its bottom '
                f'{depth * 100:.1f} cm below the top of the yellow block (inside means under '
                f'{SOCKET[1] * 100:.1f} cm and at least {DEPTH * 100:.0f} cm deep)'
            )
        around = float(np.linalg.norm(ring.position[:2] - peg.position[:2]))
        gap = float(ring.position[2] - RING[2] - top)
        ringed = around <= RING_OFF and abs(gap) <= RESTING
        if not ringed:
            problems.append(
                f'the blue block is {around * 100:.1f} cm from the peg (around it means under '
                f'{RING_OFF * 100:.1f} cm) and its bottom {gap * 100:+.1f} cm from the top of '
                f'the yellow block (resting on it means within {RESTING * 100:.0f} cm)'
            )
        for name, label in (('peg', 'peg'), ('ring', 'blue block')):
            if self.held_by(world, name):
                problems.append(f'the {label} is still held')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.4 * inserted + 0.4 * (inserted and ringed) + 0.2 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(
            True, 1.0, f'the peg is in the hole ({depth * 100:.1f} cm deep) and the ring over it'
        )


TASK = AssemblePegRing  # this module is a bench task plugin (harness_bench.tasks)
