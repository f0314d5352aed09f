"""The tiered verifier's claims and how tiers combine, on made-up measurements."""

import numpy as np
from harness_bench.tasks import TASKS
from harness_bench.verifier import (
    AMBIGUOUS,
    SATISFIED,
    STALE,
    VIOLATED,
    Evidence,
    Inside,
    Judgement,
    Moved,
    On,
    Released,
    Turned,
    combine,
    verify,
)
from harness_types.robot_state import ArmState, RobotState
from harness_types.scene import LocatedObject

TABLE = 0.0


def arm(name, gripper=1.0, force=0.0, z=0.3, moving=0.0):
    return ArmState(
        name,
        np.zeros(6),
        gripper,
        np.array([0.0, 0.0, z]),
        np.array([1.0, 0, 0, 0]),
        np.zeros(3),
        velocities=np.full(6, moving),
        grip_force=force,
    )


def obj(i, label, x, y, z, size=0.04):
    s = np.array([size, size, size])
    return LocatedObject(i, label, np.array([x, y, z]), s, z + size / 2)


def evidence(objects, left=None, right=None, step=10, motion=10, before=None):
    def find(query):
        words = set(query.split())
        return [o for o in objects if words <= set(o.label.split())]

    robot = RobotState(left or arm('left'), right or arm('right'), step, 0.4)
    return Evidence(robot, objects, find, step, motion, TABLE, before)


def test_a_held_raised_cube_satisfies_lift_at_tier_1_and_2():
    e = evidence([obj('c', 'red cube', 0, 0, 0.14)], left=arm('left', 0.45, 3.0, 0.14))
    v = verify(TASKS['lift_cube'].goal, e)
    assert v.verdict == SATISFIED and v.tier == 1 and len(v.evidence) == 2


def test_tiers_that_disagree_are_ambiguous():
    # the gripper feels something, but the cube is still on the table
    e = evidence([obj('c', 'red cube', 0, 0, 0.02)], left=arm('left', 0.45, 3.0, 0.14))
    v = verify(TASKS['lift_cube'].goal, e)
    assert v.verdict == AMBIGUOUS and v.tier == 1


def test_both_tiers_see_a_failed_lift():
    e = evidence([obj('c', 'red cube', 0, 0, 0.02)], left=arm('left', 0.0, 0.0, 0.14))
    assert verify(TASKS['lift_cube'].goal, e).verdict == VIOLATED


def test_views_older_than_the_last_motion_are_stale():
    e = evidence([obj('c', 'red cube', 0, 0, 0.14)], step=10, motion=12)
    assert verify(TASKS['lift_cube'].goal, e).verdict == STALE


def test_perception_abstains_while_the_arms_move_and_nothing_judges():
    e = evidence([obj('c', 'green block', 0, 0, 0.02)], left=arm('left', moving=1.0))
    v = verify(TASKS['place_in_bowl'].goal, e)
    assert v.verdict == AMBIGUOUS and v.tier == 0


def test_inside_needs_every_match_in_the_container():
    bin_ = LocatedObject(
        'b', 'red bin', np.array([0.0, 0, 0.02]), np.array([0.16, 0.16, 0.04]), 0.04
    )
    in_, out = obj('r1', 'red block', 0.01, 0, 0.02), obj('r2', 'red block', 0.3, 0, 0.02)
    assert Inside('red block', 'red bin').judge(evidence([bin_, in_]))[0] == SATISFIED
    assert Inside('red block', 'red bin').judge(evidence([bin_, in_, out]))[0] == VIOLATED
    assert Inside('red block', 'red bin').judge(evidence([in_])) is None  # no bin in view


def test_on_top_of_means_over_it_and_resting_on_its_top():
    base = obj('p', 'purple block', 0, 0, 0.02)
    assert (
        On('yellow block', 'purple block').judge(
            evidence([base, obj('y', 'yellow block', 0.005, 0, 0.06)])
        )[0]
        == SATISFIED
    )
    assert (
        On('yellow block', 'purple block').judge(
            evidence([base, obj('y', 'yellow block', 0.1, 0, 0.02)])
        )[0]
        == VIOLATED
    )


def test_a_necessary_claim_only_vetoes():
    e = evidence([], left=arm('left', 0.4, 2.0))
    assert Released().judge(e)[0] == VIOLATED
    # released grippers alone do not say the block is in the bowl: tier 1 abstains
    assert verify((Released(),), evidence([])).verdict == AMBIGUOUS


def test_moves_and_turns_are_judged_against_the_view_before():
    before = evidence([obj('c', 'yellow cube', 0, 0, 0.02)])
    after = evidence([obj('c', 'yellow cube', 0.08, 0, 0.02)], before=before)
    assert Moved('yellow cube', (1, 0), 0.1).judge(after)[0] == SATISFIED
    assert Moved('yellow cube', (0, 1), 0.1).judge(after)[0] == VIOLATED
    b = evidence([obj('r', 'red button', 0.1, 0.1, 0.01)])
    latched = evidence([obj('g', 'green button', 0.1, 0.1, 0.01)], before=b)
    assert Turned('red button', 'green').judge(latched)[0] == SATISFIED
    unpressed = evidence([obj('r', 'red button', 0.1, 0.1, 0.01)], before=b)
    assert Turned('red button', 'green').judge(unpressed)[0] == VIOLATED


def test_a_vlm_verdict_counts_only_beside_a_perception_one_for_a_task_with_its_card():
    vlm = Judgement(3, SATISFIED, 'the model says yes')
    assert combine([vlm], tier3=True).verdict == AMBIGUOUS
    assert combine([Judgement(2, SATISFIED, 'seen'), vlm], tier3=True).verdict == SATISFIED
    assert combine([Judgement(2, VIOLATED, 'seen'), vlm], tier3=True).verdict == AMBIGUOUS
    # a task whose tier 3 has no report card: kept, not counted
    alone = combine([Judgement(2, VIOLATED, 'seen'), vlm])
    assert alone.verdict == VIOLATED and vlm in alone.judgements


def test_every_task_states_its_goal_as_claims():
    for name, task in TASKS.items():
        assert task.goal, f'{name} has no goal claims'
        assert any(not c.necessary for c in task.goal), name
