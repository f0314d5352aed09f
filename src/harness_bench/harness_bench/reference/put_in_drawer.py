# Reference program for put_in_drawer (one contact per cell).
# %% look, then pull the drawer out 14 cm by its handle with the arm on the cabinet's side
handle = locate('red handle')[0]
cabinet = locate('biggest blue')[0]  # its shaded side walls may come out as pieces of their own
cube = locate('yellow cube')[0]
print('found', handle, cabinet, cube)
side = 'left' if cabinet.position[0] < 0 else 'right'
grip = pick(handle, arm=side, lift=0.0)
hand = getattr(state(), side)
move_eef(hand.tcp + [0.0, -0.14, 0.0], quat=hand.tcp_quat, arm=side)
release(side)
home(side)  # from its start pose: from the open drawer the way to the cube may brush the cabinet
# %% put the cube in the drawer's open part, 2.5 cm from the cabinet (the hand leans back toward
# the robot: its fingers stay clear of the drawer's front wall), just above the floor
handle = locate('red handle')[0]
drawer = locate('biggest green')[0]
front = cabinet.position[1] - cabinet.size[1] / 2  # the cabinet's front: the open part ends
near = handle.position[1] + handle.size[1] / 2  # the drawer's front
# Its bottom as measured: the floor's underside, or the table's top when the drawer's lowest
# points lie so near the table that perception takes it as standing on it (1.2 cm lower):
# the cube is let go from 1.3 to 2.5 cm over the floor
bottom = drawer.position[2] - drawer.size[2] / 2
print('drawer', drawer, 'open part from', round(near, 3), 'to', round(front, 3))
pick(cube, arm=side)
place([handle.position[0], front - 0.045, bottom + cube.size[2] / 2 + 0.035], arm=side)
# %% push the drawer back by its handle with the closed fingertips until its front meets the
# cabinet's (they start 3 cm in front of the handle, at its height over the table); a push that
# goes on past closed ends with the hand stopped short of its target (BLOCKED): closed
handle = locate('red handle')[0]
out = front - (handle.position[1] + handle.size[1] / 2)
height = handle.position[2] - (cabinet.position[2] - cabinet.size[2] / 2)
on('BLOCKED', lambda execution: True)
push(handle, [0.0, 1.0], out + 0.02, arm=side, height=height)
on('BLOCKED', None)
open_gripper()
home()
print('the handle now looks like', locate('red handle'))
# %% finish
finish('the cube is in the drawer and the drawer is closed')
