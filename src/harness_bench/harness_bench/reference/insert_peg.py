# Reference program for insert_peg (one contact per cell).
# %% look, then grasp the peg
peg = locate('red peg')[0]
block = locate('yellow block')[0]
print('found', peg, block)
peg_half = peg.size[2] / 2
over_hole = [block.position[0], block.position[1], block.top + peg_half + 0.005]
pick(peg, lift=0.12, toward=over_hole)
# %% bring it above the hole, its bottom 5 mm above the block's top, and let it drop in
place(position=over_hole, approach=0.06)
home()
peg = locate('red peg')[0]
print('peg now at', peg.position.round(3), 'hole at', block.position.round(3))
# %% finish
finish('the peg is in the hole')
