"""The `harness` command: bad input gets one clear line and exit 2; a program runs an episode."""

import json
import os
from pathlib import Path

import pytest
from harness_driver.cli import main

os.environ.setdefault('MUJOCO_GL', 'egl')
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    'argv,message',
    [
        (['program', 'lift_cubes', 'x.py'], "unknown task 'lift_cubes'; known tasks: handover_bar"),
        (['program', 'lift_cube', 'missing.py'], 'program file missing.py does not exist'),
        (['program', 'lift_cube', 'x.py', '--layout', '7'], 'lift_cube has layouts 0..2, not 7'),
        (
            ['--config', 'nope.yaml', 'program', 'lift_cube', __file__],
            'config file nope.yaml does not',
        ),
    ],
)
def test_bad_input_is_one_clear_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_syntax_error_in_the_program(tmp_path, capsys):
    bad = tmp_path / 'bad.py'
    bad.write_text('pick(\n')
    assert main(['program', 'lift_cube', str(bad)]) == 2
    assert 'bad.py:' in capsys.readouterr().err


def test_bad_flags_exit_2():
    with pytest.raises(SystemExit) as exc:
        main(['program', 'lift_cube'])
    assert exc.value.code == 2


def test_program_runs_an_episode_and_writes_the_run_folder(tmp_path, capsys):
    code = main(
        [
            '--config',
            str(ROOT / 'config' / 'harness.yaml'),
            'program',
            'lift_cube',
            str(ROOT / 'examples' / 'lift_cube.py'),
            '--out',
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    (run,) = tmp_path.iterdir()
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['status'] == 'ok' and summary['outcome']['success'], summary
    assert 'SUCCESS' in out and 'run folder' in out
    calls = [json.loads(line)['call'] for line in (run / 'kernel.log').read_text().splitlines()]
    assert calls[:2] == ['locate', 'pick']
    (cell,) = [json.loads(line) for line in (run / 'events.jsonl').read_text().splitlines()]
    assert cell['status'] == 'ok' and cell['executions']
