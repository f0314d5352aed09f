# Reference program for push_to_zone (one contact per cell).
# %% look, then push the cube toward the zone's centre
import numpy as np

cube = locate('yellow cube')[0]
zone = locate('green')[0]  # by colour: a cube touching the zone makes it look like a block
print('found', cube, zone)
gap = zone.position[:2] - cube.position[:2]
push(cube, gap / np.linalg.norm(gap), float(np.linalg.norm(gap)))
# %% measure again; push the rest when the cube is not well inside yet
cube = locate('yellow cube')[0]
gap = zone.position[:2] - cube.position[:2]
print('cube now', cube.position.round(3), 'gap', gap.round(3))
if np.abs(gap).max() > 0.03:
    push(cube, gap / np.linalg.norm(gap), float(np.linalg.norm(gap)))
# %% open the fingers, home, then finish
open_gripper()
home()
finish('the cube is in the zone')
