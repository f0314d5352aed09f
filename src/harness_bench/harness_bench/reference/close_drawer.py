# Reference program for close_drawer (one contact per cell).
# %% look: the drawer is closed when its front (where the handle starts) meets the cabinet's
handle = locate('red handle')[0]
cabinet = locate('biggest blue')[0]  # its shaded side walls may come out as pieces of their own
front = cabinet.position[1] - cabinet.size[1] / 2
out = front - (handle.position[1] + handle.size[1] / 2)
print('found', handle, cabinet, f'the drawer stands out {out:.3f} m')
# %% push the handle straight back along the drawer's slide with the closed fingertips
# (they start 3 cm in front of it, at its height over the table the cabinet stands on). The
# drawer stops where it is closed: a push that goes on further ends with the hand stopped short
# of its target (BLOCKED), which here means closed.
height = handle.position[2] - (cabinet.position[2] - cabinet.size[2] / 2)
on('BLOCKED', lambda execution: True)
push(handle, [0.0, 1.0], out + 0.02, height=height)
on('BLOCKED', None)
open_gripper()
home()
print('the handle now looks like', locate('red handle'))
# %% finish
finish('the drawer is closed')
