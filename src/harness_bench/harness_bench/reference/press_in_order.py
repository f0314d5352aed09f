# Reference program for press_in_order (one contact per cell). INSTRUCTION is the task's
# instruction, as a model copies it into its program.
# %% read the order, look, then press the first button
import re

order = re.search(r'in this order: (\w+), (\w+), (\w+)', INSTRUCTION).groups()
buttons = [locate(f'{colour} button')[0] for colour in order]
print('order', order, 'buttons', buttons)
press(buttons[0], force=5.0)
home()
# %% the second
press(buttons[1], force=5.0)
home()
# %% the third, then open the fingers, home, finish
press(buttons[2], force=5.0)
open_gripper()
home()
finish('pressed ' + ', '.join(order) + ', in that order')
