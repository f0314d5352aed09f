# Reference program for close_drawer (one contact per cell).
# %% look: the drawer is closed when its front (where the handle starts) meets the cabinet's
handle = locate('red handle')[0]
cabinet = locate('biggest blue')[0]  # its shaded side walls may come out as pieces of their own
front = cabinet.position[1] - cabinet.size[1] / 2
out = front - (handle.position[1] + handle.size[1] / 2)
print('found', handle, cabinet, f'the drawer stands out {out:.3f} m')
# %% push the handle straight back along the drawer's slide with the closed fingertips
# (they start 3 cm in front of it, at its height over the table the cabinet stands on)
height = handle.position[2] - (cabinet.position[2] - cabinet.size[2] / 2)
push(handle, [0.0, 1.0], out + 0.03, height=height)
open_gripper()
home()
print('the handle now looks like', locate('red handle'))
# %% finish
finish('the drawer is closed')
