# Reference program for press_button (one contact per cell).
# %% look, then press the red button
button = locate('red button')[0]
print('found', button, 'and', locate('blue button'))
steps = press(button, force=5.0)
print('the press ended with', steps[-2].event, steps[-2].detail)
# %% open the fingers, back home, then finish
open_gripper()
home()
finish('pressed the red button')
