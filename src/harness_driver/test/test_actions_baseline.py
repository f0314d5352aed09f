"""The scripted actions rung's baseline: the motions of a programs-rung run, one action each."""

import json

import numpy as np
import pytest
from harness_driver.actions_baseline import (
    HOME_COMMAND,
    SourceRunError,
    check_source,
    recorded_actions,
)
from harness_driver.interface import action_cell
from harness_driver.models import ModelError, make_model


def command(left=None, left_grip=1.0, right=None, right_grip=1.0):
    return np.concatenate(
        [
            left if left is not None else np.zeros(6),
            [left_grip],
            right if right is not None else np.zeros(6),
            [right_grip],
        ]
    )


def write_run(folder, cells, episode=None, status='finished'):
    """A run folder: its episode record and, per cell, executions with their commands."""
    folder.mkdir()
    (folder / 'ticks').mkdir()
    (folder / 'summary.json').write_text(json.dumps({'status': status}))
    lines = [episode or {'type': 'episode', 'task': 't', 'layout': 0, 'seed': 3}]
    for call, executions in enumerate(cells, start=1):
        rows = [row for _, segment in executions for row in segment]
        lines.append(
            {
                'type': 'cell',
                'call': call,
                'executions': [
                    {'skill': skill, 'arm': 'left', 'ticks': len(segment)}
                    for skill, segment in executions
                ],
            }
        )
        if rows:
            np.savez(
                folder / 'ticks' / f'cell-{call:03d}.npz',
                time=np.arange(len(rows)) * 0.04,
                measured=np.array(rows, np.float32),
                command=np.array(rows, np.float32),
            )
    (folder / 'events.jsonl').write_text('\n'.join(json.dumps(x) for x in lines) + '\n')
    return folder


def test_each_execution_becomes_one_action_per_arm_it_moved(tmp_path):
    reach = np.array([0.1, 1.0, 1.2, -0.5, 0.0, 0.2])
    both = np.array([0.3, 0.5, 0.5, 0.0, 0.0, 0.0])
    run = write_run(
        tmp_path / 'run',
        [
            [('locate', []), ('move_eef', [command(reach * 0.5), command(reach)])],
            [
                ('close_gripper', [command(reach, 0.5), command(reach + 1e-4, 0.0)]),
                ('home', [command(both, 0.0, both), command(np.zeros(6), 0.0, -both)]),
            ],
        ],
    )
    actions = [json.loads(a) for a in recorded_actions(run)]
    assert actions == [
        {'arm': 'left', 'joints': pytest.approx(reach.tolist(), abs=1e-4)},
        {'arm': 'left', 'gripper': 0.0},  # a hold's shift of 0.1 mrad is not a motion
        {'arm': 'left', 'joints': pytest.approx([0.0] * 6)},
        {'arm': 'right', 'joints': pytest.approx((-both).tolist(), abs=1e-4)},
    ]
    for a in actions:  # each one a valid reply of the rung
        assert action_cell(json.dumps(a))


def test_an_episode_that_never_moved_replays_nothing(tmp_path):
    assert recorded_actions(write_run(tmp_path / 'run', [[('locate', [])]])) == []
    assert HOME_COMMAND[6] == HOME_COMMAND[13] == 1.0


@pytest.mark.parametrize(
    'episode,message',
    [
        ({'type': 'episode', 'task': 'u', 'layout': 0, 'seed': 3}, 'ran task u layout 0 seed 3'),
        ({'type': 'episode', 'task': 't', 'layout': 0, 'seed': 4}, 'not t layout 0 seed 3'),
        (
            {'type': 'episode', 'task': 't', 'layout': 0, 'seed': 3, 'interface': 'skills'},
            'an episode of the skills rung, not of programs',
        ),
        (
            {'type': 'episode', 'task': 't', 'layout': 0, 'seed': 3, 'randomize': 'clutter'},
            'ran in a scene randomised on clutter, not on none',
        ),
    ],
)
def test_only_a_programs_run_of_the_same_episode_is_replayed(tmp_path, episode, message):
    run = write_run(tmp_path / 'run', [], episode)
    with pytest.raises(SourceRunError, match=message):
        check_source(run, 't', 0, 3)


def test_a_missing_or_torn_source_is_a_clear_error(tmp_path):
    with pytest.raises(SourceRunError, match='has no events.jsonl'):
        recorded_actions(tmp_path)
    run = write_run(tmp_path / 'run', [[('move_eef', [command(np.ones(6))])]])
    (run / 'ticks' / 'cell-001.npz').unlink()
    with pytest.raises(SourceRunError, match='cell-001.npz is missing'):
        recorded_actions(run)


def test_the_scripted_actions_model_needs_its_source(tmp_path):
    with pytest.raises(ModelError, match='--actions-from') as exc:
        make_model('scripted', ['home()\n'], 1.0, interface='actions')
    assert exc.value.setup
    run = write_run(tmp_path / 'run', [[('move_eef', [command(np.ones(6))])]])
    model = make_model('scripted', ['home()\n'], 1.0, interface='actions', actions_from=run)
    assert model.cells == ['{"arm": "left", "joints": [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]}']


def test_small_motions_that_add_up_are_sent(tmp_path):
    """Each execution nudges a joint by 1.5 mrad: one alone is no motion, two are."""
    step = np.array([1.5e-3, 0, 0, 0, 0, 0])
    nudges = [('move_eef', [command(step * k)]) for k in (1, 2, 3)]
    actions = [json.loads(a) for a in recorded_actions(write_run(tmp_path / 'run', [nudges]))]
    assert actions == [{'arm': 'left', 'joints': pytest.approx((step * 2).tolist(), abs=1e-4)}]


@pytest.mark.parametrize('status', ['error', 'interrupted', 'model_service_failed', None])
def test_a_source_cut_short_is_not_replayed(tmp_path, status):
    run = write_run(tmp_path / 'run', [], status=status)
    if status is None:
        (run / 'summary.json').unlink()
    message = f'ended with status {status}' if status else 'has no summary.json'
    with pytest.raises(SourceRunError, match=message):
        check_source(run, 't', 0, 3)


def test_a_source_that_failed_its_task_is_replayed(tmp_path):
    check_source(write_run(tmp_path / 'run', [], status='budget_exhausted'), 't', 0, 3)


@pytest.mark.parametrize(
    'damage', ['torn npz', 'corrupt npz', 'short npz', 'bad event', 'bad cell', 'not utf-8']
)
def test_a_damaged_source_is_a_clear_error(tmp_path, damage):
    run = write_run(tmp_path / 'run', [[('move_eef', [command(np.ones(6))])]])
    events = run / 'events.jsonl'
    ticks = run / 'ticks' / 'cell-001.npz'
    if damage == 'torn npz':
        ticks.write_bytes(ticks.read_bytes()[:40])
    elif damage == 'corrupt npz':
        np.savez_compressed(ticks, command=np.zeros((1, 14)))
        raw = bytearray(ticks.read_bytes())
        raw[60:90] = bytes(30)  # inside the compressed stream: zlib fails, not the zip index
        ticks.write_bytes(bytes(raw))
    elif damage == 'not utf-8':
        events.write_bytes(events.read_bytes() + b'\xff\xfe\n')
    elif damage == 'short npz':
        np.savez(ticks, command=np.zeros((2, 14)))
    elif damage == 'bad event':
        events.write_text(events.read_text() + '{"type": "cell", \n')
    else:
        events.write_text(events.read_text() + '{"type": "cell", "call": "x"}\n')
    message = {
        'torn npz': 'cell-001.npz cannot be read',
        'corrupt npz': 'cell-001.npz cannot be read',
        'not utf-8': 'events.jsonl cannot be read',
        'short npz': 'cell-001.npz holds 2 ticks, its executions 1',
        'bad event': 'events.jsonl line 3 is not JSON',
        'bad cell': 'a cell record is malformed',
    }[damage]
    with pytest.raises(SourceRunError, match=message):
        recorded_actions(run)


def test_a_source_that_moved_nothing_finishes_at_once_saying_so(tmp_path):
    run = write_run(tmp_path / 'run', [[('locate', [])]])
    model = make_model('scripted', ['home()\n'], 1.0, interface='actions', actions_from=run)
    assert model.block == 'finish' and model.cells == [
        'the reference program moved nothing: no action to replay'
    ]
