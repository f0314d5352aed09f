# Reference program for rebuild_tower (one contact per cell). The tower's order is read once,
# before anything moves, and kept: once the tower comes apart it is no longer in view. Blocks
# are looked up by colour alone (a block seen from some angles can measure as another shape),
# the tower's without slivers (a lower block's edge seen past the one on it).
# %% look: the tower's blocks, bottom to top, and the zone; two free spots to set blocks aside
import numpy as np

zone = locate('yellow')[0]
everything = locate('')
blocks = [o for o in everything if o.id != zone.id and min(o.size[0], o.size[1]) > 0.02]
top = max(blocks, key=lambda o: o.position[2])
tower = sorted(
    (o for o in blocks if np.linalg.norm(o.position[:2] - top.position[:2]) < 0.03),
    key=lambda o: o.position[2],
)
order = [o.label.split()[0] for o in tower]
# Where a block goes down on the table: the centre of one standing there, 5 mm up (a block low
# in the fingers would press on the table otherwise).
standing_z = tower[0].position[2] + 0.005
arm = 'left' if tower[0].position[0] < 0 else 'right'
side = -1.0 if arm == 'left' else 1.0
taken = [(o.position[:2], max(o.size[0], o.size[1]) / 2) for o in everything]
spots = [
    np.array([side * x, y])
    for x in np.arange(0.06, 0.35, 0.02)
    for y in np.arange(-0.1, 0.11, 0.02)
]
aside = []
for s in sorted(spots, key=lambda s: np.linalg.norm(s - [side * 0.18, 0.0])):
    if all(np.linalg.norm(s - p) > r + 0.07 for p, r in taken):
        aside.append(np.array([s[0], s[1], standing_z]))
        taken.append((s, 0.03))
    if len(aside) == 2:
        break
print('order, bottom to top:', order, 'zone', zone.position.round(3), 'aside', aside, arm)
pick(tower[2], arm=arm, toward=aside[0])
# %% set the top block aside
place(position=aside[0])
home()  # out of the head camera's way
# %% grasp the middle block, to set it aside too
middle = locate(f'biggest {order[1]}')[0]
pick(middle, arm=arm, toward=aside[1])
# %% set it aside
place(position=aside[1])
home()  # out of the head camera's way
# %% grasp the bottom block, for the zone
bottom = locate(f'biggest {order[0]}')[0]
target = np.array([zone.position[0], zone.position[1], standing_z])
pick(bottom, arm=arm, toward=target)
# %% put it on the zone's centre
place(position=target)
home()  # out of the head camera's way
# %% grasp the middle block, for the bottom one, measured again
bottom = locate(f'biggest {order[0]}')[0]
middle = locate(f'biggest {order[1]}')[0]
pick(middle, arm=arm, toward=bottom)
# %% put it on the bottom block
place(onto=bottom)
home()  # out of the head camera's way
# %% grasp the top block, for the middle one, measured again
middle = locate(f'biggest {order[1]}')[0]
top = locate(f'biggest {order[2]}')[0]
pick(top, arm=arm, toward=middle)
# %% put it on the middle block, then home
place(onto=middle)
home()
print('tower:', [(o.label, o.position.round(3)) for o in locate('')])
# %% finish
finish('rebuilt the tower on the zone: ' + ', '.join(order) + ', bottom to top')
