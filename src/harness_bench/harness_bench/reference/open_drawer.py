# Reference program for open_drawer (one contact per cell).
# %% look, then grasp the handle where it is (no lift: the drawer only slides)
handle = locate('red handle')[0]
print('found', handle)
grip = pick(handle, lift=0.0)
# %% pull it straight toward the robot along the drawer's slide, then let go
hand = getattr(state(), grip.arm)
move_eef(hand.tcp + [0.0, -0.12, 0.0], quat=hand.tcp_quat, arm=grip.arm)
release(grip.arm)
home()
print('the handle now looks like', locate('red'))
# %% finish
finish('the drawer is open')
