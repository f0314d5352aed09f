# Reference program for pick_numbered (one contact per cell).
# %% look at each white cube's top face with a wrist camera and count its dots
import numpy as np


def count_dots(image):
    """Dark blobs inside the brightest region (the cube's top face) of a wrist image."""
    grey = image.astype(float).mean(axis=2)
    white = grey > 170
    rows, cols = np.nonzero(white)
    if len(rows) < 50:
        return 0
    top, bottom, left, right = rows.min(), rows.max(), cols.min(), cols.max()
    face = grey[top : bottom + 1, left : right + 1]
    dark = face < 80
    seen = np.zeros_like(dark)
    blobs = 0
    for r, c in zip(*np.nonzero(dark), strict=True):
        if seen[r, c]:
            continue
        blobs += 1
        stack = [(r, c)]
        seen[r, c] = True
        while stack:
            y, x = stack.pop()
            for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                v, u = y + dy, x + dx
                inside = 0 <= v < dark.shape[0] and 0 <= u < dark.shape[1]
                if inside and dark[v, u] and not seen[v, u]:
                    seen[v, u] = True
                    stack.append((v, u))
    return blobs


cubes = locate('white cube')
dots = {}
for cube in cubes:
    arm = 'left' if cube.position[0] < 0.05 else 'right'
    move_eef(cube.position + [0.0, 0.0, 0.16], quat=[0.5, -0.5, 0.5, 0.5], arm=arm)
    dots[cube.id] = count_dots(look(f'cam_{arm}_wrist'))
print('dots per cube:', dots)
wanted = [c for c in cubes if dots[c.id] == 3]
if len(wanted) != 1:
    raise RuntimeError(f'expected one cube with 3 dots, counted {dots}')
target = wanted[0]
# %% grasp that cube and lift it
grip = pick(target, lift=0.15)
print('holding', grip)
# %% check that the fingers still feel it, then finish
arm = getattr(state(), grip.arm)
if arm.grip_force < 0.5:
    raise RuntimeError('the cube slipped out of the gripper')
finish('holding the cube with 3 dots')
