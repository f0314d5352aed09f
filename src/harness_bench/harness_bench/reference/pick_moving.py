# Reference program for pick_moving (one contact per cell).
# %% measure how the cube moves while the far arm rises a little (out of the cameras' way),
# then grasp it where it will be when the fingers close
import dataclasses

first = locate('orange cube')[0]
t0 = state().time
arm = 'left' if first.position[0] < 0.05 else 'right'
other = 'right' if arm == 'left' else 'left'
hand = getattr(state(), other)
move_eef(hand.tcp + [0.0, 0.0, 0.04], arm=other)
cube = locate('orange cube')[0]
velocity = (cube.position - first.position) / (state().time - t0)
velocity[2] = 0.0
print('cube at', cube.position.round(3), 'moving', (velocity * 100).round(2), 'cm/s')
LEAD_S = 2.7  # about how long a pick from home takes to close the fingers (~66 ticks)
target = dataclasses.replace(cube, position=cube.position + velocity * LEAD_S)
t1 = state().time
grip = pick(target, arm=arm, lift=0.12)
print('holding', grip, 'after', round(state().time - t1, 2), 's')
# %% check the fingers still feel it, then finish
hand = getattr(state(), grip.arm)
if hand.grip_force < 0.5:
    raise RuntimeError('the cube slipped out of the gripper')
finish('holding the cube off the conveyor')
