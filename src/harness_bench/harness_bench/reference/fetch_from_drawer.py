# Reference program for fetch_from_drawer (one contact per cell). The cube is not in view
# until the drawer is open: the instruction says where it is.
# %% look: the handle and the zone; grasp the handle where it is (no lift: the drawer slides)
handle = locate('orange handle')[0]
zone = locate('yellow')[0]
print('found', handle, zone, 'red now:', locate('red cube'))
grip = pick(handle, lift=0.0)
# %% pull it straight toward the robot along the drawer's slide, then let go
hand = getattr(state(), grip.arm)
move_eef(hand.tcp + [0.0, -0.13, 0.0], quat=hand.tcp_quat, arm=grip.arm)
release(grip.arm)
home()
# %% the cube is in view now: grasp it, for the zone
cube = locate('biggest red')[0]
# Its centre over the zone's, its bottom 5 mm above it (a cube low in the fingers would press on
# the table otherwise).
target = [zone.position[0], zone.position[1], zone.top + max(cube.size) / 2 + 0.005]
print('cube', cube)
pick(cube, arm=grip.arm, toward=target)
# %% put it on the zone's centre, then home
place(position=target)
home()
print('cube now', locate('red cube'))
# %% finish
finish('the red cube is out of the drawer, on the yellow zone')
