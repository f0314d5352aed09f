# Reference program for lift_tray (one contact per cell).
# %% look, then grasp the far handle with the arm on the tray's side, the near one with the other
tray = locate('purple tray')[0]
print('found', tray)
handle = tray.size[1] / 2 - 0.035  # a handle's centre from the tray's centre, along y
far, near = ('left', 'right') if tray.position[0] < 0 else ('right', 'left')
# The far handle from 8 cm: pick keeps a tool that reaches from the grasp to its approach, so
# that tool also reaches every height the tray is raised to below (the steepest one, from the
# default 5 cm, may stop a few mm short of 8 cm at a steep wrist's joint limit). The near
# handle keeps the steepest tool: a shallower one reaches over the tray and touches it.
grips = {far: pick(tray, arm=far, along=handle, lift=0.0, approach=0.08)}
grips[near] = pick(tray, arm=near, along=-handle, lift=0.0)
objects, held = scene()
print('holding:', held)
# %% raise both ends in small steps, one arm after the other, so the tray stays level
s = state()
start = {'left': s.left.tcp.copy(), 'right': s.right.tcp.copy()}
for k in range(1, 9):
    for arm in ('left', 'right'):
        # Heights from the grasp (the load makes each hand sag a little: steps from where it
        # is would add the sags up), with the tool as it grasped (the measured one, tilted by
        # the load, may lie just past a joint limit).
        move_eef(start[arm] + [0.0, 0.0, 0.01 * k], quat=grips[arm].quat, arm=arm)
s = state()
print('tcp heights', round(s.left.tcp[2], 3), round(s.right.tcp[2], 3))
# %% finish
finish('the tray is lifted with both arms')
