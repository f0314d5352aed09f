# Reference program for lift_unseen (one contact per cell). INSTRUCTION is the task's
# instruction, as a model copies it into its program.
# %% read what to lift, look, then grasp it and lift it
import re

import numpy as np

colour, noun = re.search(r'pick up the (\w+) (\w+)', INSTRUCTION, re.IGNORECASE).groups()
found = locate(colour)
# The one of that colour called so; else the biggest (its shape may have been measured as
# another; a shaded patch of table of the same colour measures flat).
target = max(found, key=lambda o: (noun in o.label, float(np.prod(o.size))))
print('wanted the', colour, noun, 'found', found, '->', target, 'size', target.size.round(3))
grip = pick(target, lift=0.15)
print('holding:', grip)
# %% check that the fingers still feel it, then finish
arm = getattr(state(), grip.arm)
print('gripper', round(arm.gripper, 2), 'grip force', round(arm.grip_force, 1), 'N, tcp', arm.tcp)
if arm.grip_force < 0.5:
    raise RuntimeError(f'the {colour} {noun} slipped out of the gripper')
finish(f'the {colour} {noun} is held above the table')
