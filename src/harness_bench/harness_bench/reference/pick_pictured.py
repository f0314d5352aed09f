# Reference program for pick_pictured (one contact per cell).
# %% name the pictured object's colour from the picture, find it, grasp it and lift it
import colorsys

import numpy as np

picture = look('task_picture').rgb.astype(float)
shown = np.abs(picture - 200.0).max(axis=2) > 10  # the plain background is (200, 200, 200)
r, g, b = np.median(picture[shown], axis=0) / 255.0
hue = colorsys.rgb_to_hsv(r, g, b)[0] * 360.0
BANDS = (
    (15, 'red'),
    (42, 'orange'),
    (75, 'yellow'),
    (170, 'green'),
    (260, 'blue'),
    (330, 'purple'),
    (360, 'red'),
)
colour = next(name for top, name in BANDS if hue <= top)
found = locate(colour)
print('the picture shows something', colour, '(hue', round(hue), ') ->', found)
grip = pick(found[0], lift=0.15)
print('holding', grip)
# %% check that the fingers still feel it, then finish
hand = getattr(state(), grip.arm)
if hand.grip_force < 0.5:
    raise RuntimeError('the object slipped out of the gripper')
finish(f'holding the {colour} object the picture shows')
