# Reference program for place_on_target (one contact per cell). place() puts the cube where the
# grasp measured it, a few mm off once the fingers have closed on it: the cube is measured
# again in the hand over the target and the hand corrected before it is let go.
# %% look, then grasp the cube for the target
import numpy as np

cube = locate('blue cube')[0]
target = locate('green')[0]  # the drawn target, by its colour
print('found', cube, target)
half = cube.size[2] / 2
table = target.position[2]  # the flat target lies on the table
over = [target.position[0], target.position[1], table + half + 0.02]
grip = pick(cube, toward=over)
arm = grip.arm
tool = getattr(state(), arm)
offset = cube.position - (np.asarray(tool.tcp) - [0.0, 0.0, 0.12])  # the cube from the grasp
quat = list(tool.tcp_quat)
# %% bring it over the target, 2 cm up, and correct the hand by what the cameras measure
hand = np.asarray(over) - offset
move_eef(list(hand), quat=quat, arm=arm)
for _ in range(3):
    tcp = np.asarray(getattr(state(), arm).tcp)
    found = locate('blue')
    now = min(found, key=lambda o: np.linalg.norm(o.position - tcp)) if found else None
    # the fingers may hide part of it: trust only a measurement of the whole cube (its sides
    # as long as it is tall; the footprint measured on the table may include a turned side)
    side = cube.size[2]
    if now is None or now.size.min() < 0.85 * side or now.size.max() > 1.25 * side:
        print('the cube in the hand is not seen whole:', now)
        break
    error = target.position[:2] - now.position[:2]
    print('cube', now.position.round(4), 'off by (mm)', (error * 1000).round(1))
    if np.abs(error).max() < 0.002 or np.abs(error).max() > 0.02:
        break
    hand[:2] += error
    move_eef(list(hand), quat=quat, arm=arm)
# %% lower it straight down to 3 mm above the table, let go, home, and measure
hand[2] = table + half + 0.003 - offset[2]
move_eef(list(hand), quat=quat, arm=arm)
release(arm)
home()
cube = locate('blue cube')[0]
print('cube now at', cube.position.round(4), 'target at', target.position.round(4))
# %% finish
finish('the cube is on the target')
