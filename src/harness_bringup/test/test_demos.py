"""`harness demos`: the reference program on a sampled layout, every camera recorded at every
tick, the satisfied trial written as a dataset a policy can learn from."""

import json
import os
from pathlib import Path

import av
import numpy as np
import pyarrow.parquet as pq
from harness_bringup.cli import main

os.environ.setdefault('MUJOCO_GL', 'egl')
ROOT = Path(__file__).resolve().parents[3]


def test_demos_write_a_dataset_a_policy_can_learn_from(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv('HARNESS_CONFIG', str(ROOT / 'config' / 'harness.yaml'))
    out = tmp_path / 'demos'
    code = main(
        ['demos', 'lift_cube', '--layouts', 'random:1', '--seed-base', '7', '--out', str(out)]
        + ['--image-size', '48x64']
    )
    assert code == 0, capsys.readouterr().err[-2000:]
    dataset = out / 'dataset'
    info = json.loads((dataset / 'meta/info.json').read_text())
    collection = json.loads((dataset / 'collection.json').read_text())
    assert collection['episodes'] == 1 and collection['runs_without_demonstration'] == []
    assert sorted(p.name for p in out.iterdir()) == ['bench', 'collection.yaml', 'dataset']
    assert info['harness/cameras_left_out'] == {}
    assert info['features']['observation.images.cam_head']['shape'] == [48, 64, 3]
    frames = pq.read_table(next((dataset / 'data').glob('*/*.parquet'))).to_pydict()
    state = np.asarray(frames['observation.state'])
    action = np.asarray(frames['action'])
    moving = np.abs(state[1:] - state[:-1]).max(axis=1) > 1e-3
    # LeRobot's convention: an action leads towards the next frame's state.
    to_next = np.abs(action[:-1] - state[1:])[moving].mean()
    to_now = np.abs(action[:-1] - state[:-1])[moving].mean()
    assert to_next < to_now
    env = np.asarray(frames['observation.environment_state'])
    assert env.shape[1] == 10 and np.allclose(env[:, :9], env[0, :9])  # located before moving
    assert 0.76 < env[0][2] < 0.82 and not env[0][3:9].any()  # one red cube on the table
    # the clock since the first observation, a tick a frame: the start is told from the end
    assert env[0, 9] == 0.0 and np.allclose(np.diff(env[:, 9]), 0.04, atol=1e-4)
    # One image of its own per frame: the camera's distinct images come at info.json's fps.
    video = next((dataset / 'videos/observation.images.cam_left_wrist').glob('*/*.mp4'))
    with av.open(str(video)) as container:
        images = [f.to_ndarray(format='rgb24').astype(int) for f in container.decode(video=0)]
    assert len(images) == info['total_frames']
    changed = [np.abs(b - a).mean() > 0.05 for a, b in zip(images, images[1:], strict=False)]
    assert np.mean(np.asarray(changed)[moving[: len(changed)]]) > 0.9


def test_demos_interrupted_while_writing_keep_no_dataset(tmp_path, monkeypatch, capsys):
    """(A Ctrl-C there had left a dataset of the episodes written so far, which LeRobot and
    training read as whole, and a traceback.)"""
    import harness_recording.lerobot

    def cut_short(runs, out, say, image_size=None):
        (out / 'meta').mkdir(parents=True)
        (out / 'meta' / 'info.json').write_text('{"total_episodes": 1}')
        raise KeyboardInterrupt

    monkeypatch.setattr(harness_recording.lerobot, 'write_demos', cut_short)
    monkeypatch.setenv('HARNESS_CONFIG', str(ROOT / 'config' / 'harness.yaml'))
    out = tmp_path / 'demos'
    code = main(
        ['demos', 'lift_cube', '--layouts', 'random:1', '--seed-base', '7', '--out', str(out)]
    )
    assert code == 130
    assert 'interrupted while writing the dataset: none kept' in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ['bench', 'collection.yaml']
