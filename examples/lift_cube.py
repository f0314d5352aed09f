# A program for `harness program lift_cube examples/lift_cube.py`: look, one contact, check.
cube = locate('cube')[0]
print('found', cube)
grip = pick(cube)
print('holding:', grip)
print('gripper opening:', round(state().left.gripper, 2))
