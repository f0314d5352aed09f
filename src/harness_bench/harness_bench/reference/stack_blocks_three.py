# Reference program for stack_blocks_three (one contact per cell).
# %% look, then grasp the green block with the arm that reaches the red one
red = locate('red block')[0]
green = locate('green block')[0]
blue = locate('blue block')[0]
arm = 'left' if red.position[0] < 0 else 'right'
print('found', red, green, blue, 'using', arm)
pick(green, arm=arm, toward=red)
# %% put it on the red block
place(onto=red)
# %% grasp the blue block, for the green one, measured again
green = locate('green block')[0]
pick(blue, arm=arm, toward=green)
# %% put it on the green block
place(onto=green)
home()
print('tower:', [o.position.round(3) for o in locate('block')])
# %% finish
finish('red, green, blue tower built')
