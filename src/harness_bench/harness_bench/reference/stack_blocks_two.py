# Reference program for stack_blocks_two (one contact per cell).
# %% look, then grasp the yellow block with the arm that reaches the purple one
top = locate('yellow block')[0]
base = locate('purple block')[0]
arm = 'left' if base.position[0] < 0 else 'right'
print('found', top, base, 'using', arm)
pick(top, arm=arm, toward=base)
# %% stack it on the purple block, measured again (the yellow one may have hidden it), home, check
base = locate('purple block')[0]
place(onto=base)
home()
top = locate('yellow block')[0]
print('yellow block now at', top.position.round(3), 'purple at', base.position.round(3))
# %% finish
finish('the yellow block is on the purple block')
