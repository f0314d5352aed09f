# Reference program for assemble_peg_ring (one contact per cell).
# %% look, then grasp the peg (steeply: it must stay upright in the hand)
peg = locate('red peg')[0]
block = locate('yellow block')[0]
print('found', peg, block)
over_hole = [block.position[0], block.position[1], block.top + peg.size[2] / 2 + 0.005]
pick(peg, lift=0.12, toward=over_hole)
# %% stage one: bring it above the hole, its bottom 5 mm above the block's top, let it drop in;
# home, out of the head camera's view of the ring
place(position=over_hole, approach=0.06)
home()
# %% measure the peg where it stands now; grasp the ring (the blue block with a hole) for it.
# By its colour alone: seen into its hole from some views, it measures as a bowl.
peg = locate('red peg')[0]
ring = locate('blue')[0]
print('peg now at', peg.position.round(3), 'top', round(peg.top, 3), 'ring', ring)
# the ring's centre over the peg's axis, its bottom 5 mm above the yellow block's top: it comes
# down level from 6 cm higher, around the peg
on_block = [peg.position[0], peg.position[1], block.top + ring.size[2] / 2 + 0.005]
pick(ring, toward=on_block)
# %% stage two: lower the ring around the peg onto the yellow block, then home and look
place(position=on_block, approach=0.06)
home()
print('now', [(o.label, o.position.round(3)) for o in locate('')])
# %% finish
finish('the peg is in the hole and the ring is over it')
