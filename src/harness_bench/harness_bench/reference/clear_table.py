# Reference program for clear_table (one contact per cell).
# %% look: the three objects and the bin. Three spots in the bin on a line away from the
# robot, 6 cm apart (far, middle, near), filled in that order: the fingers open sideways, so
# they miss the objects already in, and the tool leans back toward the robot, away from them.
names = ['red cube', 'yellow cube', 'green cylinder']
things = {n: locate(n)[0] for n in names}
bin_ = locate('blue bin')[0]
print('found', things, 'bin', bin_)
todo = sorted(names, key=lambda n: -things[n].position[1])  # the farthest object first
spots = [0.06, 0.0, -0.06]


def target(n):
    # The object's centre over its spot, its bottom 1 cm above the bin's floor (6 mm): its
    # own centre height now (it stands on the table) tells where the table is.
    o = things[n]
    return [bin_.position[0], bin_.position[1] + spots[0], o.position[2] + 0.016]


grip = pick(things[todo[0]], toward=target(todo[0]))
# %% put it down in the bin; that arm home, out of the other's way
place(position=target(todo[0]))
home(grip.arm)
todo.pop(0)
spots.pop(0)
# %% grasp the next object
grip = pick(things[todo[0]], toward=target(todo[0]))
# %% put it down in the bin; that arm home
place(position=target(todo[0]))
home(grip.arm)
todo.pop(0)
spots.pop(0)
# %% grasp the last object
grip = pick(things[todo[0]], toward=target(todo[0]))
# %% put it down in the bin, then home and look
place(position=target(todo[0]))
home()
print('now', [(o.label, o.position.round(3)) for o in locate('')], 'bin at', bin_.position.round(3))
# %% finish
finish('the red cube, the yellow cube and the green cylinder are in the bin')
