"""`harness bench --ray`: a two-episode bench on a local Ray instance, the same tables as a
local bench. Ray is an optional extra (requirements-ray.txt): without it the test skips."""

import json
from pathlib import Path

import pytest
from harness_bringup.cli import main

ray = pytest.importorskip(
    'ray', reason='Ray is an optional extra: pip install -r requirements-ray.txt'
)

ROOT = Path(__file__).resolve().parents[3]


def test_a_two_episode_bench_runs_as_ray_tasks(tmp_path, capsys):
    # a local instance this process joins; --ray auto finds it already joined
    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        code = main(
            ['--config', str(ROOT / 'config' / 'harness.yaml'), 'bench', '--tasks', 'lift_cube']
            + ['--layouts', '2', '--jobs', '2', '--ray', 'auto', '--out', str(tmp_path)]
        )
    finally:
        ray.shutdown()
    assert code == 0
    out = capsys.readouterr().out
    assert 'Ray task' in out and '2/2' in out
    (folder,) = tmp_path.iterdir()
    tables = json.loads((folder / 'bench.json').read_text())
    assert tables['overall']['episodes'] == 2 and tables['overall']['success_rate'] == 1.0
    for layout in (0, 1):
        episode = folder / 'episodes' / f'lift_cube-l{layout}-s0'
        (run,) = [p for p in episode.iterdir() if (p / 'summary.json').is_file()]
        assert (run / 'events.jsonl').is_file() and (episode / 'ray.json').is_file()
    assert (folder / 'report_card.md').is_file()


def test_an_unreachable_cluster_is_one_line_and_exit_2(capsys):
    config = str(ROOT / 'config' / 'harness.yaml')
    code = main(['--config', config, 'bench', '--tasks', 'lift_cube', '--ray', '127.0.0.1:1'])
    assert code == 2
    assert 'no Ray cluster at' in capsys.readouterr().err
