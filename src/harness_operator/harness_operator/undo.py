"""What takes an action back (`harness mcp`'s undo): the inverse of the last action that has one,
worked out from the scene before it and the robot state before it; for the others, why there
is none."""

from __future__ import annotations

import numpy as np
from harness_bench.verifier import Evidence

from harness_operator.actions import Action, query_of

UNDO = 'undo:'  # an undo's key: this prefix and the key of the action it takes back

NO_INVERSE = {
    'place': 'it let go of the object: taking it back into the hand is a new pick',
    'release': 'it let go of the object: taking it back into the hand is a new pick',
    'push': 'a push has no safe inverse (pushing from the far side may not bring it back): '
    'push it back yourself if that is what you want',
    'press': 'a press cannot be taken back',
    'transfer': "a hand-over's inverse is another hand-over: do_action transfer",
    'program': "a program's effects are not known action by action",
    'policy': "a policy's effects are not known action by action",
    'home': 'home moved both arms: take each back with move_eef',
}


def inverse_of(
    action: Action, arm: str, verdict: str, before: Evidence | None, robot
) -> tuple[dict | None, str]:
    """The action that takes `action` back (run by `arm`, judged `verdict`, from the scene
    `before` it and the robot state `robot` before it), or None and why there is none."""
    if action.skill == 'pick':
        if verdict != 'satisfied':
            return (
                None,
                f'the pick did not hold the object (verdict {verdict}): nothing to put back',
            )
        if arm not in ('left', 'right'):
            return None, 'no arm moved: nothing to put back'
        query = query_of(action.args.get('obj'))
        found = before.find(query) if before is not None else []
        near = action.args.get('obj')
        if isinstance(near, dict) and found:
            found = sorted(found, key=lambda o: float(np.linalg.norm(o.position - near['near'])))
        if not found:
            return None, f'where the {query} stood before the pick was not seen'
        where = [round(float(v), 4) for v in found[0].position]
        return {'skill': 'place', 'position': where, 'arm': arm}, ''
    if action.skill == 'move_eef' or (action.skill == 'home' and action.args.get('arm')):
        moved = arm or action.args.get('arm') or ''
        if moved not in ('left', 'right'):
            return None, 'no arm moved: nothing to take back'
        state = robot.arm(moved)
        position = [round(float(v), 4) for v in state.tcp_position]
        quat = [round(float(v), 6) for v in state.tcp_quat]
        return {'skill': 'move_eef', 'position': position, 'quat': quat, 'arm': moved}, ''
    return None, NO_INVERSE.get(action.skill, 'it has no inverse')
