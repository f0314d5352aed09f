# Reference program for swap_blocks (one contact per cell). The start spots are measured once,
# before anything moves, and kept: once a block is set aside its spot is empty. Blocks are
# looked up by colour alone (a block seen from some angles can measure as another shape).
# %% look, remember both start spots, choose a free spot to set the red block aside
import numpy as np

red = locate('biggest red')[0]
blue = locate('biggest blue')[0]
# Where each block goes down: its start centre, 5 mm up (a block low in the fingers would press
# on the table otherwise).
red_spot, blue_spot = red.position + [0, 0, 0.005], blue.position + [0, 0, 0.005]
arm = 'left' if red_spot[0] + blue_spot[0] < 0 else 'right'
side = -1.0 if arm == 'left' else 1.0
taken = [(o.position[:2], max(o.size[0], o.size[1]) / 2) for o in locate('')]
spots = [
    np.array([side * x, y])
    for x in np.arange(0.06, 0.35, 0.02)
    for y in np.arange(-0.1, 0.11, 0.02)
]
free = [s for s in spots if all(np.linalg.norm(s - p) > r + 0.07 for p, r in taken)]
aside = min(free, key=lambda s: np.linalg.norm(s - [side * 0.18, 0.0]))
aside = np.array([aside[0], aside[1], red_spot[2]])  # 5 mm up too
print('red at', red_spot.round(3), 'blue at', blue_spot.round(3), 'aside', aside.round(3), arm)
pick(red, arm=arm, toward=aside)
# %% set the red block aside
place(position=aside)
home()  # out of the head camera's way
# %% grasp the blue block, for where the red one stood
blue = locate('biggest blue')[0]
pick(blue, arm=arm, toward=red_spot)
# %% put it where the red block stood
place(position=red_spot)
home()  # out of the head camera's way
# %% grasp the red block again, for where the blue one stood
red = locate('biggest red')[0]
pick(red, arm=arm, toward=blue_spot)
# %% put it where the blue block stood, then home
place(position=blue_spot)
home()
print('now', [(o.label, o.position.round(3)) for o in locate('')])
# %% finish
finish('the red and the blue block swapped places')
