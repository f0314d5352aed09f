"""End to end: an episode's trial is scored by the outcome model in shadow mode, beside its
verdict and in its dataset, and nothing of the episode changes."""

import glob
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from harness_bringup.cli import main

ROOT = Path(__file__).resolve().parents[3]


def test_an_episode_is_scored_beside_its_verdict_and_nothing_else_changes(tmp_path):
    """A real episode with the shipped model: the trial event carries the scores, the dataset
    its columns; the outcome and the verdict are the same as without the model."""
    import shutil

    config = ROOT / 'config' / 'harness.yaml'
    copied = shutil.copytree(ROOT / 'config', tmp_path / 'config')  # its files beside it
    shutil.copytree(ROOT / 'prompts', tmp_path / 'prompts')
    off = copied / 'harness.yaml'
    off.write_text(
        config.read_text().replace('outcome_model: outcome_model.json', "outcome_model: ''")
    )
    assert "outcome_model: ''" in off.read_text()
    (copied / 'outcome_model.json').write_text('')  # never read: the model is off
    results = {}
    for name, path in (('on', config), ('off', off)):
        argv = ['--config', str(path), 'run', 'lift_cube', '--layout', '0', '--seed', '3']
        assert main([*argv, '--out', str(tmp_path / name)]) == 0
        run = next((tmp_path / name).glob('*lift_cube*'))
        events = [json.loads(ln) for ln in (run / 'events.jsonl').read_text().splitlines()]
        results[name] = (json.loads((run / 'summary.json').read_text()), events, run)
    (on, events_on, run_on), (off_summary, events_off, _) = results['on'], results['off']
    assert on['outcome'] == off_summary['outcome'] and on['env_steps'] == off_summary['env_steps']
    trial_on = next(e for e in events_on if e['type'] == 'trial')
    trial_off = next(e for e in events_off if e['type'] == 'trial')
    assert trial_on['verdict'] == trial_off['verdict'] and 'outcome_model' not in trial_off
    score = trial_on['outcome_model']
    assert score['predicted'] == ('success' if on['outcome']['success'] else 'failure')
    assert (run_on / score['surprise_file']).is_file()
    table = glob.glob(str(run_on / 'lerobot' / 'meta' / 'episodes' / '**' / '*.parquet'))[0]
    row = pq.read_table(table).to_pylist()[0]
    assert row['harness/outcome_p_success'] == pytest.approx(score['p_success'])
