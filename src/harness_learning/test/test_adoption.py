"""The adoption gate's own part (no episode runs here): the figures read from run folders, the
decision and its reasons, the catalogue entry written in place with the rest of the file kept,
the held-out check against the candidate's demonstrations, and the adoption log."""

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from demos import demo
from harness_learning.adoption import (
    AdoptionError,
    GateRecord,
    GateRule,
    SideFigures,
    catalogue_entry,
    count_policy_runs,
    decide,
    figures,
    log_decision,
    replace_entry,
    side_dict,
    store_checkpoint,
    trained_layouts,
    training_record,
)
from harness_learning.training import CHECKPOINT, RECORD
from harness_policy.catalog import load_catalog
from harness_recording.lerobot import write_datasets

ROOT = Path(__file__).resolve().parents[3]


def run_folder(root: Path, name: str, success: bool, executions: list[dict], **summary) -> Path:
    run = root / 'b' / 'episodes' / name / 'run'
    run.mkdir(parents=True)
    lines = [json.dumps({'call': 'locate', 'args': {}})] + [json.dumps(e) for e in executions]
    (run / 'kernel.log').write_text('\n'.join(lines) + '\n')
    base = {'task': 'lift_cube', 'layout': -1, 'seed': int(name.split('s')[-1])}
    base |= {'status': 'episode_ended', 'outcome': {'success': success}}
    (run / 'summary.json').write_text(json.dumps(base | summary))
    return run


def policy(event: str, detail: str = '', ticks: int = 50) -> dict:
    return {'execution': 'run_policy', 'event': event, 'detail': detail, 'ticks': ticks}


def move(event: str = 'COMPLETED', ticks: int = 20) -> dict:
    return {'execution': 'move_eef', 'event': event, 'detail': '', 'ticks': ticks}


SUCCEEDED = 'episode ended: the task succeeded'


def test_a_run_finished_when_it_ended_the_episode_or_no_program_moved_after_it(tmp_path):
    cases = {
        's1': (True, [policy('EPISODE_ENDED', SUCCEEDED)], (1, 1)),
        # the programs finished what it left: a run, not a finished one
        's2': (True, [policy('COMPLETED'), move(), move('EPISODE_ENDED', 3)], (1, 0)),
        # it said done, the episode then succeeded with no motion of the programs
        's3': (True, [policy('COMPLETED'), move('EPISODE_ENDED', 0)], (1, 1)),
        # it said done; the wrap-up went home and the task was judged then
        's7': (True, [policy('COMPLETED'), {'execution': 'home', 'ticks': 40}], (1, 1)),
        's4': (False, [policy('TIMEOUT'), move()], (1, 0)),
        's5': (True, [move(), move('EPISODE_ENDED', 3)], (0, 0)),  # the programs alone
        # two runs: the first stalled, the second finished
        's6': (True, [policy('COMPLETED'), policy('EPISODE_ENDED', SUCCEEDED)], (2, 1)),
    }
    for name, (success, executions, expected) in cases.items():
        run = run_folder(tmp_path, name, success, executions)
        assert count_policy_runs(run, success) == expected, name
    side = figures('c', tmp_path)
    assert (side.episodes, side.successes, side.policy_runs, side.finished_runs) == (7, 6, 7, 4)
    assert side.failed == [('lift_cube', 4)]
    assert side_dict(side)['finish_rate'] == round(4 / 7, 3)


def test_an_episode_that_did_not_run_is_counted_apart(tmp_path):
    run_folder(tmp_path, 's1', False, [], status='policy_service_failed')
    run_folder(tmp_path, 's2', True, [policy('EPISODE_ENDED', SUCCEEDED)])
    side = figures('c', tmp_path)
    assert (side.episodes, side.not_run, side.successes) == (1, 1, 1)
    with pytest.raises(AdoptionError, match='holds no episode run folder'):
        figures('c', tmp_path / 'nothing')


PROGRAMS = SideFigures('programs', episodes=10, successes=10)


@pytest.mark.parametrize(
    'candidate,incumbent,adopt,said',
    [
        (SideFigures('c', 10, 0, 10, 10, 9), PROGRAMS, True, 'finished 90% of its runs'),
        (SideFigures('c', 10, 0, 10, 10, 2), PROGRAMS, False, 'under the bar of 50%'),
        # the fallback rescued a worse policy, the kit is as good: still refused
        (SideFigures('c', 10, 0, 10, 10, 6), SideFigures('i', 10, 0, 10, 10, 8), False, 'fewer'),
        (SideFigures('c', 10, 0, 10, 10, 8), SideFigures('i', 10, 0, 10, 10, 8), True, 'at least'),
        (SideFigures('c', 10, 0, 9, 10, 9), SideFigures('i', 10, 0, 10, 10, 8), False, '9/10'),
        (SideFigures('c', 9, 1, 9, 9, 9), PROGRAMS, False, 'did not run'),
        (SideFigures('c', 10, 0, 10, 0, 0), PROGRAMS, False, 'never ran'),
    ],
)
def test_the_gate_adopts_only_when_every_test_passes(candidate, incumbent, adopt, said):
    decision = decide(candidate, incumbent, GateRule(0.5))
    assert decision.adopt is adopt
    assert any(said in reason for reason in decision.reasons), decision.reasons


def test_the_bar_is_a_share():
    with pytest.raises(ValueError, match=r'in \[0, 1\]'):
        GateRule(1.5)


def trained_folder(root: Path, seeds: list[int], status: str = 'done') -> Path:
    dataset = root / 'dataset'
    trials = [demo(8, k) for k in range(len(seeds))]
    trials = [
        replace(t, meta=t.meta | {'task_name': 'lift_cube', 'layout': -1, 'seed': s})
        for t, s in zip(trials, seeds, strict=True)
    ]
    write_datasets(dataset, trials)
    run = root / 'train'
    (run / CHECKPOINT).mkdir(parents=True)
    (run / CHECKPOINT / 'model.safetensors').write_bytes(b'weights')
    record = {'status': status, 'policy': 'act', 'dataset': str(dataset), 'demonstrations': 2}
    record |= {'steps_done': 100, 'plan': {'width': 128}, 'checkpoint': CHECKPOINT}
    record |= {'tasks': {'Pick up the red cube.': ['red cube']}}
    (run / RECORD).write_text(json.dumps(record))
    (run / 'loss.csv').write_text('step,loss\n50,0.1\n')
    return run


def test_the_candidates_demonstrations_are_the_layouts_it_may_not_be_judged_on(tmp_path):
    run = trained_folder(tmp_path, [3000, 3001])
    assert trained_layouts(training_record(run)) == {('lift_cube', 3000), ('lift_cube', 3001)}


def test_a_candidate_whose_dataset_is_gone_cannot_be_held_out(tmp_path):
    record = training_record(trained_folder(tmp_path, [1]))
    with pytest.raises(AdoptionError, match='is not here: the layouts it trained on'):
        trained_layouts(record | {'dataset': str(tmp_path / 'gone')})


def test_the_layouts_a_training_recorded_are_read_not_its_datasets_folder_now(tmp_path):
    """The dataset's folder may hold other data by gate time (an export over it): what the
    training recorded when it began is what it trained on; [] is all fixed layouts."""
    record = training_record(trained_folder(tmp_path, [1]))
    gone = {'dataset': str(tmp_path / 'gone')}
    assert trained_layouts(record | gone | {'layouts': [['lift_cube', 7]]}) == {('lift_cube', 7)}
    assert trained_layouts(record | gone | {'layouts': []}) == set()


def test_a_candidate_must_be_a_finished_training(tmp_path):
    with pytest.raises(AdoptionError, match='not a `harness policy train` folder'):
        training_record(tmp_path)
    run = trained_folder(tmp_path, [1], status='running')
    with pytest.raises(AdoptionError, match="its training is 'running', not done"):
        training_record(run)


@pytest.mark.parametrize(
    'field,said',
    [
        ({'fps': 'fast'}, 'its fps must be a positive number'),  # (a ValueError traceback)
        ({'fps': 0}, 'its fps must be a positive number'),
        ({'tasks': [1, 'a']}, 'its tasks must map each instruction'),  # (a TypeError one)
        ({'tasks': {'Lift.': 'red cube'}}, 'its tasks must map each instruction'),
    ],
)
def test_a_malformed_training_record_is_one_adoption_error(tmp_path, field, said):
    run = trained_folder(tmp_path, [1])
    record = json.loads((run / RECORD).read_text()) | field
    (run / RECORD).write_text(json.dumps(record))
    with pytest.raises(AdoptionError, match=said):
        training_record(run)


def test_a_dataset_episode_without_a_layout_is_an_adoption_error(tmp_path):
    # (a null layout or seed in meta/episodes: int(None), a traceback, in adopt and plan)
    import pyarrow as pa
    import pyarrow.parquet as pq

    record = training_record(trained_folder(tmp_path, [1]))
    (part,) = (tmp_path / 'dataset' / 'meta' / 'episodes').rglob('*.parquet')
    table = pq.read_table(part)
    column = table.schema.get_field_index('harness/layout')
    nulls = pa.nulls(len(table), type=table.schema.field(column).type)
    pq.write_table(table.set_column(column, 'harness/layout', nulls), part)
    with pytest.raises(AdoptionError, match='has layout None and seed 1, not two integers'):
        trained_layouts(record)


def test_an_adopted_entry_replaces_its_block_and_keeps_every_other_line(tmp_path):
    shipped = (ROOT / 'config' / 'policies.yaml').read_text()
    catalogue = tmp_path / 'policies.yaml'
    catalogue.write_text(shipped)
    run = trained_folder(tmp_path, [3000, 3001])
    store = store_checkpoint(run, tmp_path / 'policies' / 'act_lift_cube-v2')
    assert (store / CHECKPOINT / 'model.safetensors').read_bytes() == b'weights'
    with pytest.raises(AdoptionError, match='exists'):
        store_checkpoint(run, store)
    base = yaml.safe_load(shipped)['policies']['act_lift_cube']
    entry = catalogue_entry(
        training_record(run), 'policies/act_lift_cube-v2', base, 2, 'X.', 'lift', 1.0
    )
    replace_entry(catalogue, 'act_lift_cube', entry)
    text = catalogue.read_text()
    lines, now = shipped.splitlines(), text.splitlines()
    start = lines.index('  act_lift_cube:')
    end = next(i for i in range(start + 1, len(lines)) if re.match(r'  \w+:', lines[i]))
    # the old entry's block alone was replaced: the comments and the other entries stay
    assert now[:start] == lines[:start] and now[-(len(lines) - end) :] == lines[end:]
    assert '# The policy catalogue' in text and 'act_press_button:' in text
    spec = load_catalog(catalogue).get('act_lift_cube')
    assert spec.version == 2 and spec.checkpoint == str(store)
    assert 'Version 2, adopted by the gate: X.' in spec.description
    assert spec.instructions == ('Pick up the red cube.',)
    assert spec.cameras == tuple(base['cameras']) and spec.learned == ('lift',)
    assert list(load_catalog(catalogue).policies)[:2] == ['act_lift_cube', 'act_press_button']
    assert '(version 2)' in spec.text()


def test_an_adopted_candidate_finishes_its_kind_as_it_did_at_the_gate(tmp_path):
    """Replacing a trained incumbent that did not finish its kind (act_press_button's
    `finishes: []`), the adopted candidate that finished most of its runs at the gate is
    entered as finishing it (the strategy rule gives it A); one that finished fewer is not."""
    shipped = yaml.safe_load((ROOT / 'config' / 'policies.yaml').read_text())['policies']
    run = trained_folder(tmp_path, [3000])
    base = shipped['act_press_button']
    entry = catalogue_entry(training_record(run), 'policies/x-v2', base, 2, 'X.', 'press', 0.6)
    assert entry['learned'] == ['press'] and entry['finishes'] == ['press']
    assert base['finishes'] == []  # (the incumbent's entry is not changed)
    # adopted under a lower bar (--min-finish 0.2): it does not usually finish
    low = catalogue_entry(training_record(run), 'policies/x-v2', base, 2, 'X.', 'press', 0.3)
    assert low['learned'] == ['press'] and low['finishes'] == []


def test_a_new_entry_goes_after_the_others_or_before_the_one_named(tmp_path):
    catalogue = tmp_path / 'policies.yaml'
    catalogue.write_text(
        '# mine\npolicies:\n  other:\n    description: x\n    endpoint: ws://h:1\n'
    )
    replace_entry(catalogue, 'new', {'description': 'y', 'endpoint': 'ws://h:2'})
    assert list(load_catalog(catalogue).policies) == ['other', 'new']
    assert catalogue.read_text().startswith('# mine\n')
    replace_entry(catalogue, 'first', {'description': 'z', 'endpoint': 'ws://h:3'}, before='other')
    assert list(load_catalog(catalogue).policies) == ['first', 'other', 'new']
    flow = tmp_path / 'flow.yaml'
    flow.write_text('policies: {a: {description: x, endpoint: ws://h:1}}\n')
    replace_entry(flow, 'b', {'description': 'y', 'endpoint': 'ws://h:2'}, before='a')
    assert list(load_catalog(flow).policies) == ['b', 'a']


@pytest.mark.parametrize(
    'text', ['policies: {}\n', 'policies: {other: {description: x, endpoint: ws://h:1}}\n']
)
def test_a_catalogue_in_flow_style_is_written_anew_with_the_entry(tmp_path, text):
    catalogue = tmp_path / 'policies.yaml'
    catalogue.write_text(text)
    replace_entry(catalogue, 'new', {'description': 'y', 'endpoint': 'ws://h:2'})
    assert load_catalog(catalogue).get('new').endpoint == 'ws://h:2'
    assert len(load_catalog(catalogue).policies) == 1 + ('other' in text)


def test_a_catalogue_version_is_a_whole_number_from_one(tmp_path):
    catalogue = tmp_path / 'policies.yaml'
    for bad in ('0', 'two', '1.5', 'true'):
        catalogue.write_text(
            f'policies:\n  p:\n    description: x\n    endpoint: ws://h:1\n    version: {bad}\n'
        )
        with pytest.raises(Exception, match='p.version must be a whole number from 1'):
            load_catalog(catalogue)


def test_every_decision_is_a_line_of_the_log(tmp_path):
    catalogue = tmp_path / 'policies.yaml'
    for adopted in (False, True):
        record = GateRecord('t', 'c', 'e', ['lift_cube'], [9000], 'i', adopted, ['r'], {}, {}, 1)
        path = log_decision(catalogue, record)
    lines = [json.loads(ln) for ln in path.read_text().splitlines()]
    assert [ln['adopted'] for ln in lines] == [False, True] and lines[0]['seeds'] == [9000]
