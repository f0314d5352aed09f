# Reference program for pick_numbered (one contact per cell).
# %% look at each white cube's top face with a wrist camera and count its dots
import numpy as np

# The tool pointing forward (+y) and 60 degrees down, jaws along x: the wrist camera then looks
# at a cube 6 cm ahead of and 12 cm above the tool centre point.
LOOK_QUAT = [0.6123724, -0.3535534, 0.3535534, 0.6123724]


def count_dots(image):
    """Dark blobs enclosed by the white top face of a cube in a wrist image."""
    rgb = image.astype(int)
    white = (rgb.min(axis=2) > 190) & (rgb.max(axis=2) - rgb.min(axis=2) < 25)
    dark = rgb.max(axis=2) < 70
    inside = np.zeros_like(dark)
    for r in range(white.shape[0]):
        cols = np.nonzero(white[r])[0]
        if len(cols):
            inside[r, cols.min() : cols.max() + 1] = True
    for c in range(white.shape[1]):
        rows = np.nonzero(white[:, c])[0]
        column = np.zeros(white.shape[0], bool)
        if len(rows):
            column[rows.min() : rows.max() + 1] = True
        inside[:, c] &= column
    dots = dark & inside
    seen = np.zeros_like(dots)
    blobs = 0
    for r, c in zip(*np.nonzero(dots), strict=True):
        if seen[r, c]:
            continue
        blobs += 1
        seen[r, c] = True
        stack = [(r, c)]
        while stack:
            y, x = stack.pop()
            for v, u in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
                within = 0 <= v < dots.shape[0] and 0 <= u < dots.shape[1]
                if within and dots[v, u] and not seen[v, u]:
                    seen[v, u] = True
                    stack.append((v, u))
    return blobs


cubes = locate('white cube')
dots = {}
last = None
for cube in cubes:
    arm = 'left' if cube.position[0] < 0.05 else 'right'
    if last not in (None, arm):
        home(last)  # out of the other arm's way
    last = arm
    # The same view from a little nearer or higher where the first pose is out of reach.
    on('SKILL_ERROR', lambda execution: True)
    for offset in ([0.0, -0.06, 0.12], [0.0, -0.04, 0.13], [0.0, -0.08, 0.11]):
        if move_eef(cube.position + offset, quat=LOOK_QUAT, arm=arm).ok:
            break
    on('SKILL_ERROR', None)
    dots[cube.id] = count_dots(look(f'cam_{arm}_wrist').rgb)
home()  # both arms out of the way of the one that picks
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
