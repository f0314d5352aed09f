# Reference program for pick_by_shape (one contact per cell). INSTRUCTION is the task's
# instruction, as a model copies it into its program.
# %% read which shape to lift among which objects, look, then grasp it and lift it
import re

colour, shape = re.search(
    r'three (\w+) objects, pick up the (\w+)', INSTRUCTION, re.IGNORECASE
).groups()
print(f'every {colour} object:', locate(colour))
target = locate(f'{colour} {shape}')[0]
print('wanted the', colour, shape, 'found', target)
grip = pick(target, lift=0.15)
print('holding', grip)
# %% check that the fingers still feel it, then finish
hand = getattr(state(), grip.arm)
if hand.grip_force < 0.5:
    raise RuntimeError(f'the {shape} slipped out of the gripper')
finish(f'holding the {colour} {shape}')
