# Reference program for stack_small_parts (one contact per cell).
# %% look, then grasp the green cube with the arm that reaches the red one
red = locate('red cube')[0]
green = locate('green cube')[0]
blue = locate('blue cube')[0]
arm = 'left' if red.position[0] < 0 else 'right'
print('found', red, green, blue, 'using', arm)
pick(green, arm=arm, toward=red)
# %% put it on the red cube, measured again
red = locate('red cube')[0]
place(onto=red)
home()  # the hand above the small tower hides the red cube: measure it from home
# %% grasp the blue cube, for the green one, measured again
green = locate('green cube')[0]
print('green now at', green.position.round(4), 'red at', red.position.round(4))
pick(blue, arm=arm, toward=green)
# %% put it on the green cube
green = locate('green cube')[0]
place(onto=green)
home()
print('tower:', [o.position.round(3) for o in locate('cube')])
# %% finish
finish('red, green, blue tower of small cubes built')
