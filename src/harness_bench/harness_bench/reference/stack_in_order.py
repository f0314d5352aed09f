# Reference program for stack_in_order (one contact per cell). INSTRUCTION is the task's
# instruction, as a model copies it into its program.
# %% read the order, look, then grasp the middle block with the arm that reaches the bottom one
import re

order = re.search(r'bottom to top: (\w+), (\w+), (\w+)', INSTRUCTION).groups()
bottom, middle, top = (locate(f'{colour} block')[0] for colour in order)
arm = 'left' if bottom.position[0] < 0 else 'right'
print('order', order, 'found', bottom, middle, top, 'using', arm)
pick(middle, arm=arm, toward=bottom)
# %% put it on the bottom block
place(onto=bottom)
# %% grasp the top block, for the middle one, measured again
middle = locate(f'{order[1]} block')[0]
pick(top, arm=arm, toward=middle)
# %% put it on the middle block
place(onto=middle)
home()
print('tower:', [o.position.round(3) for o in locate('block')])
# %% finish
finish('stacked ' + ', '.join(order) + ', bottom to top')
