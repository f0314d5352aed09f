# Reference program for lift_cube (one contact per cell).
# %% look, then grasp the cube and lift it
cube = locate('red cube')[0]
print('found', cube)
grip = pick(cube, lift=0.15)
print('holding:', grip)
# %% check that the fingers still feel the cube, then finish
arm = getattr(state(), grip.arm)
print('gripper', round(arm.gripper, 2), 'grip force', round(arm.grip_force, 1), 'N, tcp', arm.tcp)
if arm.grip_force < 0.5:
    raise RuntimeError('the cube slipped out of the gripper')
finish('the cube is held above the table')
