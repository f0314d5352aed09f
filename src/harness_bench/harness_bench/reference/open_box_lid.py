# Reference program for open_box_lid (one contact per cell).
# %% look: the lid turns on its back bottom edge; the handle sticks out of its front edge
import numpy as np

handle = locate('red handle')[0]
lid = locate('biggest green')[0]
hinge = np.array([lid.position[1] + lid.size[1] / 2, lid.position[2] - lid.size[2] / 2])
print('found', handle, lid, 'hinge at y, z', hinge.round(3))
# The grasp, 1 cm out from the handle's middle (clear of the lid's edge), swung about the
# hinge line: a point 105 degrees up the arc, where the lid stands past upright.
grasp = np.array([handle.position[1] - 0.01, handle.position[2]])
radius = float(np.linalg.norm(grasp - hinge))
angle0 = float(np.arctan2(grasp[1] - hinge[1], hinge[0] - grasp[0]))


def on_arc(degrees):
    a = angle0 + np.radians(degrees)
    y, z = hinge + radius * np.array([-np.cos(a), np.sin(a)])
    return [handle.position[0], y, z]


# %% grasp the handle (no lift), with a tool that also reaches the top of the arc
grip = pick(handle, lift=0.0, along=-0.01, toward=on_arc(105))
# %% swing the lid up along the arc, the tool as it grasped (the handle turns in the fingers)
for degrees in (10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 105):
    move_eef(on_arc(degrees), quat=grip.quat, arm=grip.arm)
release(grip.arm)
home()
print('the handle now looks like', locate('red handle'))
# %% finish
finish('the lid is open')
