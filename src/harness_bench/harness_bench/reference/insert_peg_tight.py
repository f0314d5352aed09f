# Reference program for insert_peg_tight (one contact per cell). The hole leaves 1 mm on each
# side: place() from the offset measured before the grasp is off by the few mm the peg shifts
# as the fingers close, so the peg is measured again in the hand and brought over the hole in
# small corrections before it goes in.
# %% look, then grasp the peg
import numpy as np

peg = locate('red peg')[0]
block = locate('yellow block')[0]
print('found', peg, block)
peg_half = peg.size[2] / 2
hole = block.position[:2]
over_hole = [hole[0], hole[1], block.top + peg_half + 0.01]
# held near its top, the fingers hide little of it: the cameras measure it in the hand
grip = pick(peg, lift=0.12, toward=over_hole, grasp_height=peg.top - 0.015)
arm = grip.arm
tool = getattr(state(), arm)
quat = list(tool.tcp_quat)
offset = peg.position - (np.asarray(tool.tcp) - [0.0, 0.0, 0.12])  # the peg from the grasp


def held_peg():
    """The peg as the cameras see it in the hand: the red object nearest the TCP, or None
    when the cameras see it in parts (the hand hides its middle from one of them)."""
    tcp = np.asarray(getattr(state(), arm).tcp)
    found = locate('red')
    near = min(found, key=lambda o: np.linalg.norm(o.position - tcp)) if found else None
    return near if near is not None and near.size[2] > 0.9 * 2 * peg_half else None


# %% bring it over the hole, its bottom 3 cm above the block's top, correcting what is measured
hover = block.top + 0.03  # where its bottom waits
hand = np.array([hole[0], hole[1], hover + peg_half]) - offset
move_eef(list(hand), quat=quat, arm=arm)
bottom = hover  # where the grasp puts it, until the cameras say better
for _ in range(5):
    now = held_peg()
    if now is None:  # seen in parts: measure again a little higher
        hand[2] += 0.01
        bottom += 0.01
        move_eef(list(hand), quat=quat, arm=arm)
        continue
    # the block measured again too: from above it the wrist camera sees it as well (the head
    # camera alone is off by up to ~7 mm at the table's far sides); by its colour, as with the
    # peg over its hole it may not measure as a block
    seen = locate('yellow')
    if seen:
        block = min(seen, key=lambda o: np.linalg.norm(o.position[:2] - hole))
        hole = block.position[:2]
    bottom = now.position[2] - now.size[2] / 2
    error = np.array([hole[0] - now.position[0], hole[1] - now.position[1], hover - bottom])
    print('peg', now.position.round(4), 'off by (mm)', (error * 1000).round(1))
    if np.abs(error[:2]).max() < 0.001:  # within what locate measures
        break
    hand += error
    bottom = hover
    move_eef(list(hand), quat=quat, arm=arm)
# %% lower it straight down, its bottom 3 mm into the hole, let go (it slides down on its own)
hand[2] -= bottom - (block.top - 0.003)
move_eef(list(hand), quat=quat, arm=arm)
release(arm)
home()
peg = locate('red peg')
print('peg now', [p.position.round(3) for p in peg], 'hole at', block.position.round(3))
# %% finish
finish('the peg is in the hole')
