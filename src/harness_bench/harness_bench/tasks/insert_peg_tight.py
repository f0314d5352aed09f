"""Insert a peg into a tight hole: 1 mm of clearance on each side (2 mm in all)."""

from harness_bench.tasks.insert_peg import DEPTH, InsertPeg

# outer half width, hole half width, half height: a 2.6 cm hole for the 2.4 cm peg
SOCKET = (0.04, 0.013, 0.025)


class InsertPegTight(InsertPeg):
    """insert_peg's peg and layouts, a hole 6 mm narrower, the peg centred within 5 mm."""

    name = 'insert_peg_tight'
    step_limit = 1500
    instruction = 'Insert the red peg into the tight hole of the yellow block.'
    description = (
        'A red peg (2.4 cm across, 8 cm tall) stands on the table beside a yellow block '
        '(8 cm square, 5 cm tall) fixed to the table, with a 2.6 cm square hole through it: '
        '1 mm of clearance on each side. Success: the peg stands in the hole, its bottom at '
        f"least {DEPTH * 100:.0f} cm below the block's top, let go; every gripper that holds "
        'nothing is open and both arms are home.'
    )
    socket = SOCKET
    centred = 0.005
    done = 'the peg is in the tight hole'


TASK = InsertPegTight  # this module is a bench task plugin (harness_bench.tasks)
