"""Trials written as a LeRobot v3.0 dataset, read back with pyarrow and PyAV as LeRobot reads
them; with LeRobot itself where a Python with `lerobot` is given (HARNESS_LEROBOT_PYTHON) or
installed."""

import json
import os
import subprocess
import sys
import textwrap

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from harness_driver.lerobot import TrialData, write_datasets

FPS = 25


def trial(task: str, n: int, colour: int, verdict: str, tier: int) -> TrialData:
    t = 4.0 + np.arange(n) / FPS
    state = np.tile(np.arange(14, dtype=np.float32), (n, 1)) + colour
    # the camera shows one colour until halfway, then another (frames held between JPEGs)
    early = np.full((48, 64, 3), colour, np.uint8)
    late = np.full((48, 64, 3), 255 - colour, np.uint8)
    return TrialData(
        task=task,
        state=state,
        action=state + 0.5,
        time=t,
        images={'cam_head': [(t[0], early), (t[n // 2], late)]},
        meta={'run': 'r', 'trial_id': f'trial-{colour}', 'verdict': verdict, 'tier': tier}
        | {'layout': 0, 'executor': 'skill', 'verifier_evidence': ['tier 2: seen']},
    )


@pytest.fixture(scope='module')
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp('ds') / 'lerobot'
    trials = [
        trial('pick the cube', 10, 40, 'satisfied', 1),
        trial('place it', 7, 200, 'violated', 2),
        trial('pick the cube', 5, 90, 'satisfied', 3),  # a VLM alone makes no demo
    ]
    summary = write_datasets(root, trials)
    return root, summary


def test_info_describes_the_frames_and_videos(dataset):
    root, summary = dataset
    info = json.loads((root / 'meta/info.json').read_text())
    assert info['codebase_version'] == 'v3.0' and info['fps'] == FPS
    assert (info['total_episodes'], info['total_frames'], info['total_tasks']) == (3, 22, 2)
    f = info['features']
    assert f['observation.state'] == {
        'dtype': 'float32',
        'shape': [14],
        'names': f['action']['names'],
    }
    assert len(f['action']['names']) == 14 and f['action']['names'][6] == 'left_gripper'
    assert f['observation.images.cam_head']['dtype'] == 'video'
    assert f['observation.images.cam_head']['shape'] == [48, 64, 3]
    assert summary == {'episodes': 3, 'frames': 22, 'cameras': ['cam_head'], 'demos': 1}


def test_the_frames_are_indexed_as_lerobot_reads_them(dataset):
    root, _ = dataset
    files = sorted((root / 'data').glob('*/*.parquet'))
    kind = pq.read_table(files[0]).schema.field('observation.state').type
    assert pa.types.is_fixed_size_list(kind) and kind.list_size == 14
    assert kind.value_type == pa.float32()
    rows = [pq.read_table(p).to_pylist() for p in files]
    flat = [r for part in rows for r in part]
    assert [r['index'] for r in flat] == list(range(22))
    assert [r['frame_index'] for r in rows[1]] == list(range(7))
    assert rows[1][3]['timestamp'] == pytest.approx(3 / FPS)
    assert rows[0][0]['observation.state'][:2] == [40.0, 41.0]
    assert rows[0][0]['action'][0] == 40.5
    assert {r['task_index'] for r in rows[2]} == {0}


def test_episodes_and_tasks_carry_the_verdicts(dataset):
    root, _ = dataset
    eps = pq.read_table(root / 'meta/episodes/chunk-000/file-000.parquet').to_pylist()
    assert [e['dataset_from_index'] for e in eps] == [0, 10, 17]
    assert [e['dataset_to_index'] for e in eps] == [10, 17, 22]
    assert eps[1]['harness/verdict'] == 'violated' and eps[1]['harness/tier'] == 2
    assert eps[0]['videos/observation.images.cam_head/from_timestamp'] == 0.0
    tasks = pq.read_table(root / 'meta/tasks.parquet')
    meta = json.loads(tasks.schema.metadata[b'pandas'])
    assert meta['index_columns'] == ['__index_level_0__']  # pandas reads the task as the index
    assert tasks.column('__index_level_0__').to_pylist() == ['pick the cube', 'place it']
    stats = json.loads((root / 'meta/stats.json').read_text())
    assert stats['action']['count'] == [22] and len(stats['action']['q99']) == 14
    assert np.asarray(stats['observation.images.cam_head']['mean']).shape == (3, 1, 1)


def test_each_video_frame_is_the_camera_frame_shown_at_that_tick(dataset):
    root, _ = dataset
    path = root / 'videos/observation.images.cam_head/chunk-000/file-000.mp4'
    with av.open(str(path)) as container:
        frames = [(float(f.time), f.to_ndarray(format='rgb24')) for f in container.decode(video=0)]
    assert len(frames) == 10
    assert [round(t * FPS) for t, _ in frames] == list(range(10))
    assert abs(float(frames[0][1].mean()) - 40) < 6
    assert abs(float(frames[9][1].mean()) - 215) < 6


def test_demos_hold_only_what_tier_1_or_2_satisfied(dataset):
    root, _ = dataset
    info = json.loads((root / 'demos/meta/info.json').read_text())
    assert info['total_episodes'] == 1 and info['total_frames'] == 10


LOADER = textwrap.dedent(
    """
    import sys, warnings
    warnings.filterwarnings('ignore')
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    ds = LeRobotDataset('harness/test', root=sys.argv[1], video_backend='pyav')
    first, last = ds[0], ds[len(ds) - 1]
    print(ds.num_episodes, ds.num_frames, first['task'], last['task'],
          tuple(first['observation.images.cam_head'].shape), float(first['action'][0]))
    """
)


def test_lerobot_loads_it_where_it_is_installed(dataset):
    root, _ = dataset
    python = os.environ.get('HARNESS_LEROBOT_PYTHON')
    if not python:
        pytest.importorskip(
            'lerobot', reason='lerobot is not installed (or set HARNESS_LEROBOT_PYTHON)'
        )
        python = sys.executable
    out = subprocess.run(
        [python, '-c', LOADER, str(root)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[:2] == ['3', '22']
    assert 'pick the cube' in out.stdout and '(3, 48, 64)' in out.stdout and '40.5' in out.stdout
