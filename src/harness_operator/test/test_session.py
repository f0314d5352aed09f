"""The operator session's contract on a station made of fakes: what each call runs, spends and
journals. (test_mcp_session.py drives the real one over MCP.)"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from harness_bench.tasks import TASKS
from harness_bench.verifier import Evidence
from harness_operator.budgets import BudgetRefusedError, OperatorBudgets
from harness_operator.journal import Journal, JournalError
from harness_operator.session import OperatorError, OperatorSession, SessionSpec
from harness_recording.run_folder import RunFolder
from harness_types.cell import CellResult
from harness_types.execution import COMPLETED, SKILL_ERROR, Execution
from harness_types.robot_state import ArmState, RobotState
from harness_types.scene import LocatedObject


def arm(name, gripper=1.0, force=0.0):
    return ArmState(
        name, np.zeros(6), gripper, np.array([0.0, 0.0, 0.3]), np.array([1.0, 0, 0, 0]),
        np.zeros(3), grip_force=force,
    )  # fmt: skip


class FakeStation:
    """Runs no physics: each cell advances the step by 10 and ends as `next_event` says."""

    def __init__(self) -> None:
        self.step = 0
        self.cells: list[str] = []
        self.next_event = COMPLETED
        self.holding = False
        self.estops: list[bool] = []
        self.next_detail = 'it went so'
        self.estop_ats: list[int | None] = []

    def reset(self, task, layout, seed, randomize=()):
        self.randomize = randomize
        return SimpleNamespace(
            instruction='Put the green block into the blue bowl.', description=''
        )

    def start_kernel(self, workspace, log):
        pass

    def robot(self) -> RobotState:
        left = arm('left', 0.45, 3.0) if self.holding else arm('left')
        return RobotState(left, arm('right'), self.step, self.step / 25)

    def cameras(self, names, depth=False, segmentation=False):
        return []

    def run_cell(self, code: str, timeout: float) -> CellResult:
        self.cells.append(code)
        if 'run_controller' in code or 'start(' in code:
            return CellResult('ok')
        self.step += 10
        e = Execution('pick', 'left', self.next_event, self.next_detail, start_step=self.step - 10)
        e.end_step = self.step
        if self.next_event == COMPLETED and 'pick(' in code:
            self.holding = True
        status = 'ok' if self.next_event == COMPLETED else 'escalated'
        return CellResult(status, stopped_by=None if e.ok else e, executions=[e])

    def wrap_up(self, timeout):
        return CellResult('ok')

    def estop(self, engage):
        self.estops.append(engage)

    def estop_at(self, step, cut=False):
        self.estop_ats.append((step, cut) if step is not None else None)

    def camera_frames(self, start, end):
        return {}


class FakeEyes:
    """The verifier's eyes: the block is raised while the fake arm holds it."""

    def __init__(self, station: FakeStation) -> None:
        self.station = station
        self.hidden = False

    def mark_home(self):
        pass

    def take(self, last_motion_step=0, before=None) -> Evidence:
        robot = self.station.robot()
        z = 0.1 if self.station.holding else 0.02
        objects = [] if self.hidden else [
            LocatedObject('b', 'green block', np.array([0, 0, z]), np.full(3, 0.04), z + 0.02)
        ]  # fmt: skip

        def find(q):
            return [o for o in objects if set(q.split()) <= set(o.label.split())]

        return Evidence(robot, objects, find, robot.step, last_motion_step, 0.0, before)


@pytest.fixture
def session(tmp_path):
    station = FakeStation()
    journal = Journal(
        tmp_path / 'j.jsonl',
        OperatorBudgets(
            {'reobserve': 1, 'retry': 1, 'executor_switch': 1, 'undo': 2, 'refill_pause': 1}
        ),
    )
    s = OperatorSession(
        station, FakeEyes(station), journal, TASKS['place_in_bowl'](),
        SessionSpec('place_in_bowl', 0, 0), RunFolder(tmp_path / 'run'), lambda _m: None,
        policies=('expert',),
    )  # fmt: skip
    s.start()
    return s


PICK = {'skill': 'pick', 'obj': 'green block'}


def test_two_fields_and_the_same_key_moves_nothing(session):
    r = session.do_action(PICK, 'auto', 'k1')
    assert (r.executor_status, r.verdict, r.tier, r.ok) == ('done', 'satisfied', 1, True)
    cells = len(session.station.cells)
    assert session.do_action(PICK, 'auto', 'k1') == r
    assert len(session.station.cells) == cells


def test_a_failed_action_repeated_spends_the_retry_budget_then_opens_a_ticket(session):
    session.station.next_event = SKILL_ERROR
    first = session.do_action(PICK, 'auto', 'k1')
    assert first.executor_status == 'error' and not first.ok
    session.do_action(PICK, 'auto', 'k2')  # the one retry the budget allows
    with pytest.raises(BudgetRefusedError, match='retry budget is exhausted') as refused:
        session.do_action(PICK, 'auto', 'k3')
    assert refused.value.ticket.id == 'T1'
    assert 'k3' not in session.journal.state.trials  # nothing ran
    # the owner's call (harness tickets --resolve), through the journal
    session.journal.write({'type': 'resolved', 'id': 'T1', 'note': 'ok'})
    assert session.do_action(PICK, 'auto', 'k3').trial_id == 'trial-003'


def test_switching_executors_is_budgeted_and_a_policy_is_sent_the_action_in_words(session):
    session.do_action(PICK, 'policy:expert', 'k1')
    assert "run_policy('expert', 'pick up the green block')" in session.station.cells[-1]
    session.station.holding = False
    session.do_action(PICK, 'skill', 'k2')  # a switch: the budget's one
    with pytest.raises(BudgetRefusedError, match='executor_switch'):
        session.do_action(PICK, 'policy:expert', 'k3')
    with pytest.raises(OperatorError, match='executor must be one of'):
        session.do_action(PICK, 'policy:nobody', 'k4')


def test_an_ambiguous_verdict_is_rechecked_at_the_cost_of_a_look(session):
    session.eyes.hidden = True  # perception cannot see the block: the verdict rests on tier 1
    session.station.next_event = COMPLETED
    r = session.do_action({'skill': 'place', 'into': 'blue bowl'}, 'auto', 'k1')
    assert r.verdict == 'ambiguous' and not r.ok
    again = session.recheck('k1')
    assert again['verdict'] == 'ambiguous' and again['budgets_left']['reobserve'] == 0
    with pytest.raises(BudgetRefusedError, match='reobserve'):
        session.recheck('k1')
    with pytest.raises(OperatorError, match='no trial has the key'):
        session.recheck('nope')


def test_the_emergency_stop_refuses_actions_until_released(session):
    session.estop(True)
    with pytest.raises(OperatorError, match='emergency stop is engaged'):
        session.do_action(PICK, 'auto', 'k1')
    session.estop(False)
    assert session.station.estops == [True, False]
    assert session.do_action(PICK, 'auto', 'k1').ok


def test_malformed_calls_are_refused_with_what_is_wrong(session):
    with pytest.raises(OperatorError, match='key must be a non-empty string'):
        session.do_action(PICK, 'auto', '')
    for key in ('a\x00b', 'line\nbreak', 'turn\u202eback'):
        with pytest.raises(OperatorError, match='key must be printable text'):
            session.do_action(PICK, 'auto', key)
    session.do_action({'program': 'print(1)'}, 'auto', 'p')
    with pytest.raises(OperatorError, match=r'used for another action \(program: print\(1\)\)'):
        session.do_action(PICK, 'auto', 'p')  # (the action it named, not the task)
    with pytest.raises(OperatorError, match="pick has no argument 'speed'"):
        session.do_action({**PICK, 'speed': 1}, 'auto', 'k')
    with pytest.raises(OperatorError, match='no policy'):
        session.do_action({'policy': 'ghost', 'instruction': 'do it'}, 'auto', 'k')
    with pytest.raises(OperatorError, match='non-empty list'):
        session.run_batch([])


def test_a_batch_stops_after_the_first_step_that_is_not_ok(session):
    session.station.next_event = SKILL_ERROR
    out, refused = session.run_batch(
        [{'action': PICK, 'key': 'a'}, {'action': {'skill': 'home'}, 'key': 'b'}]
    )
    assert [r.key for r in out] == ['a'] and not refused
    with pytest.raises(OperatorError, match='batch item 1: unknown skill'):
        session.run_batch([{'action': PICK, 'key': 'c'}, {'action': {'skill': 'x'}, 'key': 'd'}])
    assert 'c' not in session.journal.state.trials  # checked before the first ran
    session.estop(True)
    out, refused = session.run_batch([{'action': PICK, 'key': 'e'}])
    assert out == [] and 'emergency stop' in refused


def test_finish_judges_the_goal_and_ends_the_run(session):
    done = session.finish()
    assert done['goal_verdict']['verdict'] in ('violated', 'ambiguous')
    with pytest.raises(OperatorError, match='the run is finished'):
        session.do_action(PICK, 'auto', 'late')


def resumed_session(tmp_path) -> tuple[OperatorSession, FakeStation]:
    """A second session on the `session` fixture's journal, on a station of its own."""
    station = FakeStation()
    again = OperatorSession(
        station, FakeEyes(station), Journal(tmp_path / 'j.jsonl', OperatorBudgets({})),
        TASKS['place_in_bowl'](), SessionSpec('place_in_bowl', 0, 0),
        RunFolder(tmp_path / 'run2'), lambda _m: None, policies=('expert',),
    )  # fmt: skip
    return again, station


def test_a_new_session_resumes_the_journal(session, tmp_path):
    session.do_action(PICK, 'auto', 'k1')
    again, station = resumed_session(tmp_path)
    info = again.start()
    assert info['resumed_trials'] == 1
    assert any('pick(' in c for c in station.cells)  # the journal's action ran again
    assert again.do_action(PICK, 'auto', 'k1').trial_id == 'trial-001'
    assert again.held == {'left': 'green block'}


def test_a_trial_an_emergency_stop_cut_short_is_replayed_to_where_it_ended(session, tmp_path):
    """A client that left mid-action: the e-stop ended its trial early. The next session's
    replay stops that trial at the same step (the program would have run on to its end), then
    releases the stop; a trial that ended by itself is replayed without one."""
    from harness_types.execution import ESTOP_STOPPED

    session.do_action(PICK, 'auto', 'whole')
    session.station.next_event, session.station.next_detail = SKILL_ERROR, ESTOP_STOPPED
    cut = session.do_action({'skill': 'home'}, 'auto', 'cut')
    again, station = resumed_session(tmp_path)
    again.start()
    assert station.estop_ats == [(cut.end_step, True), None]  # for the cut trial alone
    assert station.estops == [False]  # released after it


def test_a_trial_whose_next_motion_the_emergency_stop_refused_is_replayed_without_a_cut(
    session, tmp_path
):
    """The stop came between two motions (the second was refused): the replay refuses the
    motion that would start at the trial's end step, and cuts none short."""
    from harness_types.execution import ESTOP_REFUSED

    session.station.next_event, session.station.next_detail = SKILL_ERROR, ESTOP_REFUSED
    refused = session.do_action({'skill': 'home'}, 'auto', 'refused')
    again, station = resumed_session(tmp_path)
    again.start()
    assert station.estop_ats == [(refused.end_step, False), None]


def test_a_randomised_session_resets_its_scene_and_keeps_its_own_journal(tmp_path):
    station = FakeStation()
    spec = SessionSpec('place_in_bowl', 0, 3, randomize=('clutter', 'camera'))
    assert spec.goal == {
        'task': 'place_in_bowl',
        'layout': 0,
        'seed': 3,
        'randomize': 'clutter,camera',
    }
    s = OperatorSession(
        station, FakeEyes(station), Journal(tmp_path / 'j.jsonl', OperatorBudgets({})),
        TASKS['place_in_bowl'](), spec, RunFolder(tmp_path / 'run'), lambda _m: None,
    )  # fmt: skip
    s.start()
    assert station.randomize == ('clutter', 'camera')
    plain = OperatorSession(
        station, FakeEyes(station), Journal(tmp_path / 'j.jsonl', OperatorBudgets({})),
        TASKS['place_in_bowl'](), SessionSpec('place_in_bowl', 0, 3),
        RunFolder(tmp_path / 'run2'), lambda _m: None,
    )  # fmt: skip
    with pytest.raises(JournalError, match='is for'):
        plain.start()


def test_a_key_names_one_step(session):
    session.do_action(PICK, 'auto', 'k1')
    with pytest.raises(OperatorError, match='was used for another action'):
        session.do_action({'skill': 'home'}, 'auto', 'k1')


def test_a_step_that_started_but_was_never_recorded_is_a_resume_mismatch(session, tmp_path):
    session.do_action(PICK, 'auto', 'k1')
    session.journal.write({'type': 'dispatch', 'key': 'k2', 'trial_id': 'trial-002'})  # died
    station = FakeStation()
    again = OperatorSession(
        station, FakeEyes(station), Journal(tmp_path / 'j.jsonl', OperatorBudgets({})),
        TASKS['place_in_bowl'](), SessionSpec('place_in_bowl', 0, 0),
        RunFolder(tmp_path / 'run2'), lambda _m: None,
    )  # fmt: skip
    info = again.start()
    assert any(
        'trial-002 (k2) started but was never recorded' in m for m in info['resume_mismatches']
    )
    view = again.journal_view()['this_session']
    assert view == {k: v for k, v in info.items() if k != 'instruction'}
    assert again.do_action({'skill': 'home'}, 'auto', 'k3').trial_id == 'trial-003'


def test_undo_puts_back_what_was_picked_where_it_stood_and_spends_its_budget(session):
    with pytest.raises(OperatorError, match='nothing to undo: no action has run'):
        session.undo()
    session.do_action(PICK, key='p1')
    out = session.undo()
    assert out['undone'] == 'trial-001'
    assert out['inverse'] == {'skill': 'place', 'position': [0.0, 0.0, 0.02], 'arm': 'left'}
    assert 'place(' in session.station.cells[-1] and '[0.0, 0.0, 0.02]' in session.station.cells[-1]
    assert out['trial']['key'] == 'undo:p1' and out['budgets_left']['undo'] == 1
    with pytest.raises(OperatorError, match='was an undo: an undo is not taken back'):
        session.undo()
    assert session.journal.state.events[-1]['what'] == 'undo'


def test_an_action_without_an_inverse_is_refused_with_why(session):
    session.station.next_event = SKILL_ERROR
    session.do_action(PICK, key='p1')
    with pytest.raises(OperatorError, match=r'cannot be undone: the pick did not hold the object'):
        session.undo()
    session.station.next_event = COMPLETED
    session.do_action({'skill': 'press', 'target': 'red button'}, key='b1')
    with pytest.raises(OperatorError, match='a press cannot be taken back'):
        session.undo()
    session.do_action({'program': 'home()'}, key='g1')
    with pytest.raises(OperatorError, match="a program's effects are not known"):
        session.undo()
    assert session.budgets.left()['undo'] == 2  # a refusal spends nothing


def test_a_move_is_undone_by_moving_the_tcp_back(session):
    session.do_action({'skill': 'move_eef', 'position': [0.1, 0.2, 0.3], 'arm': 'left'}, key='m')
    inverse = session.undo()['inverse']
    assert inverse == {
        'skill': 'move_eef', 'position': [0.0, 0.0, 0.3], 'quat': [1.0, 0.0, 0.0, 0.0],
        'arm': 'left',
    }  # fmt: skip


def test_undos_and_refill_pauses_are_budgeted(session):
    session.budgets.limits['undo'] = 1
    session.do_action(PICK, key='p1')
    session.undo()
    session.do_action(PICK, key='p2')
    with pytest.raises(BudgetRefusedError, match='undo budget is exhausted'):
        session.undo()
    session.budgets.limits['refill_pause'] = 1
    assert session.refill_pause('the blocks are used up')['budgets_left']['refill_pause'] == 0
    with pytest.raises(BudgetRefusedError, match='refill_pause budget is exhausted'):
        session.refill_pause('again')
    with pytest.raises(OperatorError, match='reason must say what to refill'):
        session.refill_pause(' ')


def test_a_preference_is_followed_while_its_policy_is_the_version_it_was_set_for(tmp_path):
    def open_session(version: int) -> OperatorSession:
        station = FakeStation()
        budgets = OperatorBudgets({'executor_switch': 5, 'retry': 5})
        s = OperatorSession(
            station, FakeEyes(station), Journal(tmp_path / 'j.jsonl', budgets),
            TASKS['place_in_bowl'](), SessionSpec('place_in_bowl', 0, 0),
            RunFolder(tmp_path / f'run{version}'), lambda _m: None, policies=('expert',),
            replay=False, policy_versions={'expert': version},
        )  # fmt: skip
        s.start()
        return s

    first = open_session(1)
    prefs = first.prefer('policy:expert', 'pick')['preferences']
    assert prefs == [
        {'skill': 'pick', 'executor': 'policy:expert', 'verified': True, 'policy_version': 1}
    ]
    assert first.do_action(PICK, key='p1').executor == 'policy:expert'
    assert "run_policy('expert'" in first.station.cells[-1]
    with pytest.raises(OperatorError, match='skill must be one of'):
        first.prefer('skill', 'dance')
    with pytest.raises(OperatorError, match='executor must be one of'):
        first.prefer('policy:other', 'pick')

    second = open_session(2)  # the policy was adopted anew: the preference is not verified
    (pref,) = second.preferences()
    assert not pref['verified'] and 'version 2 now, it was set for version 1' in pref['why']
    assert any(e['what'] == 'preference_unverified' for e in second.journal.state.events)
    assert second.do_action({'skill': 'pick', 'obj': 'red cube'}, key='p2').executor == 'skill'
    second.prefer('policy:expert', 'pick')  # verified again, for version 2
    assert second.preferences()[0]['verified'] and second.journal_view()['preferences']
    second.prefer('auto', 'pick')
    assert second.preferences() == []


def test_a_retry_spelt_another_way_still_spends_the_retry_budget(session):
    session.station.next_event = SKILL_ERROR
    session.do_action(PICK, 'auto', 'k1')
    session.do_action({**PICK, 'arm': ''}, 'auto', 'k2')  # the one retry
    for spelt in ({**PICK, 'lift': 0.12}, {'skill': 'pick', 'obj': ' green  block'}):
        with pytest.raises(BudgetRefusedError, match='retry budget is exhausted'):
            session.do_action(spelt, 'auto', 'k3')


def test_an_undo_that_cannot_run_spends_nothing(session):
    """Its key is checked before its budget is spent: a key of 200 characters leaves no room
    for the undo's prefix, and `undo:` keys are the undo's own."""
    long_key = 'k' * 200
    session.do_action(PICK, key=long_key)
    out = session.undo()  # the undo's own key may pass 200 characters
    assert out['trial']['key'] == f'undo:{long_key}' and out['budgets_left']['undo'] == 1
    with pytest.raises(OperatorError, match="keys that begin with 'undo:' are the undo's own"):
        session.do_action(PICK, key='undo:m3')
    assert session.budgets.left()['undo'] == 1


def test_once_the_step_limit_is_spent_actions_are_refused_and_said(session):
    limit = TASKS['place_in_bowl'].step_limit
    assert session.budgets_left()['steps_left'] == limit
    session.do_action(PICK, key='p1')
    session.station.step = limit
    assert session.budgets_left()['steps_left'] == 0
    with pytest.raises(OperatorError, match=f'step limit \\({limit} control ticks\\) is spent'):
        session.do_action({'skill': 'home'}, key='h1')
    with pytest.raises(OperatorError, match='step limit'):
        session.undo()
    assert session.budgets.left()['undo'] == 2 and 'h1' not in session.journal.state.trials


def test_an_action_during_which_no_tick_ran_has_no_inverse(session):
    session.do_action({'program': 'run_controller(lambda obs: {})'}, key='r1')  # (no tick here)
    session.do_action({'skill': 'move_eef', 'position': [0.1, 0.2, 0.3], 'arm': 'left'}, key='m')
    session.station.run_cell = lambda code, timeout: CellResult('ok')  # nothing moves now
    session.do_action({'skill': 'move_eef', 'position': [0.2, 0.2, 0.3], 'arm': 'left'}, key='n')
    with pytest.raises(OperatorError, match='nothing moved'):
        session.undo()


def test_an_undo_its_inverse_would_be_refused_for_spends_no_undo(session):
    """The inverse failed before, and the retry budget is spent: the undo is refused by the
    retry budget before the undo budget is spent."""
    session.budgets.limits['undo'] = 5

    def pick_then_undo(key: str) -> None:
        session.station.next_event = COMPLETED
        session.do_action(PICK, key=key)
        session.station.next_event = SKILL_ERROR  # the put-back fails
        session.undo()
        session.station.holding = False  # (the block is back where it stood, by hand)

    pick_then_undo('p1')  # the inverse fails once
    pick_then_undo('p2')  # the same inverse again: the one retry
    session.station.next_event = COMPLETED
    session.do_action(PICK, key='p3')
    left = session.budgets.left()['undo']
    with pytest.raises(BudgetRefusedError, match='retry budget is exhausted'):
        session.undo()
    assert session.budgets.left()['undo'] == left


def test_a_batch_checks_every_key_before_the_first_step_runs(session):
    steps = [{'action': PICK, 'key': 'ok'}, {'action': {'skill': 'home'}, 'key': 'undo:x'}]
    with pytest.raises(OperatorError, match="batch item 1: keys that begin with 'undo:'"):
        session.run_batch(steps)
    assert session.station.cells == [] or 'pick(' not in ''.join(session.station.cells)
