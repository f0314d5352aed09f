# Reference program for place_in_bowl (one contact per cell).
# %% look, then grasp the block
block = locate('green block')[0]
bowl = locate('bowl')[0]
print('found', block, bowl)
pick(block, toward=bowl)
# %% put it into the bowl, go home, check
place(into=bowl)
home()
block = locate('green block')[0]
print('block now at', block.position.round(3), 'bowl at', bowl.position.round(3))
# %% finish
finish('the green block is in the bowl')
