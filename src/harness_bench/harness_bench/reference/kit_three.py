# Reference program for kit_three (one contact per cell).
# %% look: the blocks and the zones by colour (all zones now: a block put on its zone hides it);
# grasp the first block
blocks = {b.label.split()[0]: b for b in locate('block')}
zones = {z.label.split()[0]: z for z in locate('zone')}
todo = [c for c in ('red', 'green', 'yellow') if c in blocks and c in zones]
print('blocks', blocks, 'zones', zones)
pick(blocks[todo[0]], toward=zones[todo[0]])
# %% put it on the zone of its colour
place(onto=zones[todo[0]])
todo.pop(0)
# %% grasp the next block
pick(blocks[todo[0]], toward=zones[todo[0]])
# %% put it on the zone of its colour
place(onto=zones[todo[0]])
todo.pop(0)
# %% grasp the last block
pick(blocks[todo[0]], toward=zones[todo[0]])
# %% put it on the zone of its colour, then home
place(onto=zones[todo[0]])
todo.pop(0)
home()
print('blocks now', [(o.label, o.position.round(3)) for o in locate('block')], 'zones', zones)
# %% finish
finish('each block is in the zone of its colour')
