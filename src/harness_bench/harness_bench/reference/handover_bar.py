# Reference program for handover_bar (one contact per cell).
# %% look, then grasp the bar with the left arm off its centre
bar = locate('bar')[0]
print('found', bar)
pick(bar, arm='left', along=-0.05)
# %% hand it to the right arm
grip = transfer('right')
print('now held by', grip)
objects, held = scene()
print('held:', held)
# %% finish
finish('the right arm holds the bar')
