# Reference program for sort_by_colour (one contact per cell).
# %% look: the bins by colour and the blocks of those colours; grasp the first block
bins = {b.label.split()[0]: b for b in locate('bin')}
todo = [b for b in locate('block') if b.label.split()[0] in bins]  # a block of another colour stays
print('blocks', todo, 'bins', bins)
pick(todo[0], toward=bins[todo[0].label.split()[0]])
# %% put it into the bin of its colour
place(into=bins[todo[0].label.split()[0]])
todo.pop(0)
# %% grasp the next block
pick(todo[0], toward=bins[todo[0].label.split()[0]])
# %% put it into the bin of its colour
place(into=bins[todo[0].label.split()[0]])
todo.pop(0)
# %% grasp the last block
pick(todo[0], toward=bins[todo[0].label.split()[0]])
# %% put it into the bin of its colour, then home
place(into=bins[todo[0].label.split()[0]])
todo.pop(0)
home()
# %% finish
finish('sorted the blocks by colour')
