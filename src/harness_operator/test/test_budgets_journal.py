import json

import pytest
from harness_operator.budgets import OperatorBudgets
from harness_operator.journal import Journal, JournalError, resolve_ticket
from harness_operator.trial import TrialRecord


def test_an_exhausted_budget_opens_one_ticket_and_refuses_until_it_is_resolved():
    b = OperatorBudgets({'retry': 1})
    assert b.decide('retry', 'again') is None
    b.spend('retry')
    ticket = b.decide('retry', 'again')
    assert ticket.id == 'T1' and b.left()['retry'] == 0
    b.add(ticket)
    b.add(ticket)
    assert b.tickets == [ticket]
    assert b.decide('retry', 'and again') is ticket  # the open ticket, not a second one
    b.resolve('T1', 'looked at it')
    assert b.left()['retry'] == 1 and ticket.status == 'resolved'
    assert b.decide('retry', 'again') is None
    with pytest.raises(ValueError, match='already resolved'):
        b.resolve('T1', '')
    with pytest.raises(ValueError, match='no ticket'):
        b.resolve('T9', '')


def test_a_zero_budget_refuses_the_first_call():
    ticket = OperatorBudgets({'reobserve': 0}).decide('reobserve', 'look')
    assert ticket is not None and ticket.failure_class == 'reobserve'


def test_unknown_failure_classes_are_refused():
    with pytest.raises(ValueError, match='unknown failure classes'):
        OperatorBudgets({'patience': 3})


def _record(key: str) -> TrialRecord:
    return TrialRecord(
        'trial-001', key, {'skill': 'home'}, 'skill', 'done', '', 'satisfied', ['tier 1'], 1, {}
    )


def test_the_journal_comes_back_in_a_new_session(tmp_path):
    path = tmp_path / 'j.jsonl'
    j = Journal(path, OperatorBudgets({'retry': 1}))
    j.write({'type': 'goal', 'task': 'place_in_bowl', 'layout': 0, 'seed': 0})
    j.write({'type': 'trial', 'record': _record('k1').as_dict()})
    j.write({'type': 'charge', 'failure_class': 'retry'})
    j.write({'type': 'ticket', 'ticket': {'id': 'T1', 'failure_class': 'retry', 'reason': 'r'}})
    again = Journal(path, OperatorBudgets({'retry': 1}))
    assert again.state.trials['k1'].verdict == 'satisfied'
    assert again.budgets.used['retry'] == 1
    assert again.budgets.open_ticket('retry').id == 'T1'
    with pytest.raises(JournalError, match='is for'):
        again.check_goal({'task': 'lift_cube', 'layout': 0, 'seed': 0})
    again.check_goal({'task': 'place_in_bowl', 'layout': 0, 'seed': 0})
    # the same layout in a randomised scene is another goal
    with pytest.raises(JournalError, match="'randomize': 'lighting'"):
        again.check_goal({'task': 'place_in_bowl', 'layout': 0, 'seed': 0, 'randomize': 'lighting'})


def test_the_owner_resolves_a_ticket_while_the_server_runs(tmp_path):
    path = tmp_path / 'j.jsonl'
    server = Journal(path, OperatorBudgets({'retry': 0}))
    ticket = server.budgets.decide('retry', 'again')
    server.write({'type': 'ticket', 'ticket': ticket.as_dict()})
    assert [t.id for t in server.budgets.tickets] == ['T1']
    resolve_ticket(path, 'T1', 'fixed the gripper')
    server.refresh()
    assert server.budgets.tickets[0].status == 'resolved'
    assert server.budgets.tickets[0].resolution == 'fixed the gripper'
    with pytest.raises(JournalError, match='already resolved'):
        resolve_ticket(path, 'T1', '')
    with pytest.raises(JournalError, match='no ticket'):
        resolve_ticket(path, 'T7', '')


def _resolved_at_once(path) -> list[str]:
    """Two owners resolving T1 at the same moment: what each was told."""
    import threading

    start, said = threading.Barrier(2), []

    def owner(note: str) -> None:
        start.wait()
        try:
            resolve_ticket(path, 'T1', note)
            said.append('resolved')
        except JournalError as exc:
            said.append(str(exc))

    owners = [threading.Thread(target=owner, args=(n,)) for n in ('a', 'b')]
    for t in owners:
        t.start()
    for t in owners:
        t.join()
    return sorted(said)


def test_two_owners_resolving_one_ticket_at_once_one_is_told_the_other_did(tmp_path):
    for attempt in range(5):
        path = tmp_path / f'j{attempt}.jsonl'
        server = Journal(path, OperatorBudgets({'retry': 0}))
        server.write({'type': 'ticket', 'ticket': server.budgets.decide('retry', 'x').as_dict()})
        said = _resolved_at_once(path)
        assert said[0] == 'resolved' and 'already resolved' in said[1], said
        resolved = [line for line in path.read_text().splitlines() if '"resolved"' in line]
        assert len(resolved) == 1


def test_a_malformed_journal_line_is_an_error_that_names_the_file(tmp_path):
    path = tmp_path / 'j.jsonl'
    path.write_text(json.dumps({'type': 'goal', 'task': 't'}) + '\n{oops\n')
    with pytest.raises(JournalError, match='malformed line'):
        Journal(path, OperatorBudgets({}))


def test_a_line_still_being_written_waits_for_the_next_read(tmp_path):
    path = tmp_path / 'j.jsonl'
    j = Journal(path, OperatorBudgets({}))
    with open(path, 'a') as f:
        f.write('{"type": "event", "what": "obs')
    assert j.refresh() == []
    with open(path, 'a') as f:
        f.write('erve"}\n')
    assert j.refresh()[0]['what'] == 'observe'


def test_a_record_that_does_not_fit_is_a_journal_error_and_nothing_applies_twice(tmp_path):
    path = tmp_path / 'j.jsonl'
    path.write_text(
        json.dumps({'type': 'charge', 'failure_class': 'retry'})
        + '\n'
        + json.dumps({'type': 'charge', 'failure_class': 'patience'})
        + '\n'
    )
    budgets = OperatorBudgets({'retry': 3})
    with pytest.raises(JournalError, match='does not fit'):
        Journal(path, budgets)
    assert budgets.used['retry'] == 1
    with pytest.raises(JournalError, match='does not fit'):
        j = Journal(tmp_path / 'k.jsonl', OperatorBudgets({}))
        j.write({'type': 'trial', 'record': {'trial_id': 'x'}})


@pytest.mark.parametrize(
    'record',
    [
        {'type': 'trial', 'record': [1, 2]},  # (an AttributeError: a traceback before)
        {
            'type': 'ticket',
            'ticket': {'id': 'T1', 'failure_class': 'retry', 'reason': 'r', 'status': [1]},
        },
        {'type': 'ticket', 'ticket': {'id': ['T1'], 'failure_class': 'retry', 'reason': 'r'}},
        # (its resolution had said "the teleport budget starts again", and granted none)
        {'type': 'ticket', 'ticket': {'id': 'T1', 'failure_class': 'teleport', 'reason': 'r'}},
    ],
)
def test_a_record_of_the_wrong_shape_is_a_journal_error(tmp_path, record):
    path = tmp_path / 'j.jsonl'
    path.write_text(json.dumps(record) + '\n')
    with pytest.raises(JournalError, match='does not fit'):
        Journal(path, OperatorBudgets({'retry': 3}))


def test_a_line_cut_off_by_a_crash_stays_apart_from_the_next_record(tmp_path):
    path = tmp_path / 'j.jsonl'
    path.write_text('{"type": "goal", "task": "t", "layout": 0, "seed": 0}\n{"type": "ev')
    j = Journal(path, OperatorBudgets({}))
    j.write({'type': 'event', 'what': 'observe'})
    again = Journal(path, OperatorBudgets({}))
    assert [e['what'] for e in again.state.events] == ['dropped_cut_off_line', 'observe']
    assert again.state.goal['task'] == 't'


def test_one_server_holds_a_journal(tmp_path):
    first = Journal(tmp_path / 'j.jsonl', OperatorBudgets({}))
    first.hold()
    with pytest.raises(JournalError, match='another harness mcp serves'):
        Journal(tmp_path / 'j.jsonl', OperatorBudgets({})).hold()
    # ... and is claimed by its path before it exists (harness mcp --new claims, then renames
    # the old journal): a second server cannot move the journal of one that runs
    with pytest.raises(JournalError, match='another harness mcp serves'):
        Journal.claim(tmp_path / 'j.jsonl')
    claim = Journal.claim(tmp_path / 'fresh.jsonl')
    assert not (tmp_path / 'fresh.jsonl').exists()
    fresh = Journal(tmp_path / 'fresh.jsonl', OperatorBudgets({}))
    fresh.hold(claim)
    with pytest.raises(JournalError, match='another harness mcp serves'):
        Journal.claim(tmp_path / 'fresh.jsonl')


@pytest.mark.parametrize('suffix', ['.lock', '.resolving'])
@pytest.mark.parametrize('planted', ['link', 'folder', 'fifo'])
def test_a_lock_file_planted_as_a_link_folder_or_fifo_is_refused_and_nothing_is_emptied(
    tmp_path, suffix, planted
):
    import os

    path = tmp_path / 'j.jsonl'
    server = Journal(path, OperatorBudgets({'retry': 0}))
    server.write({'type': 'ticket', 'ticket': server.budgets.decide('retry', 'x').as_dict()})
    victim = tmp_path / 'victim.txt'
    victim.write_text('victim data')
    lock = tmp_path / f'j.jsonl{suffix}'
    if planted == 'link':
        lock.symlink_to(victim)
    elif planted == 'folder':
        lock.mkdir()
    else:
        os.mkfifo(lock)
    with pytest.raises(JournalError, match='lock file'):
        if suffix == '.lock':
            Journal.claim(path)
        else:
            resolve_ticket(path, 'T1', 'n')
    assert victim.read_text() == 'victim data'
    assert '"resolved"' not in path.read_text()


def test_a_lock_file_left_by_an_earlier_run_is_kept_and_reused(tmp_path):
    path = tmp_path / 'j.jsonl'
    (tmp_path / 'j.jsonl.lock').write_text('old')
    Journal.claim(path).close()
    assert (tmp_path / 'j.jsonl.lock').read_text() == 'old'  # opened, never truncated
