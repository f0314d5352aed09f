"""Trials written as a LeRobot v3.0 dataset, read back with pyarrow and PyAV as LeRobot reads
them, and with LeRobot itself in the learning extra's environment (.venv-learning, or the
Python HARNESS_LEARNING_PYTHON names)."""

import json
import subprocess
import textwrap

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from harness_policy.learning_env import learning_python
from harness_recording.lerobot import write_datasets
from harness_recording.trial_data import (
    ExportError,
    TrialData,
    environment_state,
    located_objects,
    trial_of,
)

FPS = 25


def trial(task: str, n: int, colour: int, verdict: str, tier: int) -> TrialData:
    t = 4.0 + np.arange(n) / FPS
    state = np.tile(np.arange(14, dtype=np.float32), (n, 1)) + colour
    # a camera image at every tick: one colour until halfway, then another
    early = np.full((48, 64, 3), colour, np.uint8)
    late = np.full((48, 64, 3), 255 - colour, np.uint8)
    return TrialData(
        task=task,
        state=state,
        action=state + 0.5,
        time=t,
        images={'cam_head': [(s, early if k < n // 2 else late) for k, s in enumerate(t)]},
        meta={'run': 'r', 'trial_id': f'trial-{colour}', 'verdict': verdict, 'tier': tier}
        | {'layout': 0, 'executor': 'skill', 'verifier_evidence': ['tier 2: seen']},
        environment=environment_state([np.array([0.1, -0.2, float(colour)], np.float32)]),
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
    assert f['observation.environment_state']['shape'] == [10]
    names = f['observation.environment_state']['names']
    assert names[3] == 'located_2_x' and names[-1] == 'elapsed_s'
    assert info['harness/cameras_left_out'] == {}
    assert summary == {
        'episodes': 3,
        'frames': 22,
        'cameras': ['cam_head'],
        'demos': 1,
        'cameras_left_out': {},
        'environment_state': True,
    }


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


def test_a_frame_pairs_the_observation_with_the_action_after_it():
    """A tick's state is measured after its command: frame t is the state after tick t and
    the command of tick t + 1, so an action leads its own frame's state (LeRobot's
    convention); a ramp of commands that the state follows one tick later shows it."""
    n = 30
    command = np.linspace(0, 1, n)[:, None] * np.ones(14, np.float32)
    ticks = {'time': np.arange(1, n + 1) / FPS, 'command': command, 'measured': command.copy()}
    trial = trial_of({'instruction': 'go'}, ticks, {}, {'task': 't'}, 'r')
    assert len(trial.state) == n - 1 and len(trial.action) == n - 1
    state_next = trial.state[1:]
    to_now = np.abs(trial.action[:-1] - trial.state[:-1]).mean()
    to_next = np.abs(trial.action[:-1] - state_next).mean()
    assert to_next < to_now
    assert trial.time[0] == pytest.approx(1 / FPS)
    # With the state measured before its first tick, frame 0 is that state and the first
    # command: the start pose is among the observations a policy learns from.
    start = [0.5] * 14
    full = trial_of({'instruction': 'go', 'start_state': start}, ticks, {}, {'task': 't'}, 'r')
    assert len(full.state) == n and full.state[0].tolist() == start
    assert full.action[0].tolist() == pytest.approx(command[0].tolist())
    assert full.state[1].tolist() == pytest.approx(command[0].tolist())  # after tick 1
    assert full.action[1].tolist() == pytest.approx(command[1].tolist())
    assert full.time[0] == pytest.approx(0.0) and full.time[1] == pytest.approx(1 / FPS)
    for bad in ([0.5] * 13, [float('nan')] * 14, ['x'] * 14, None):
        assert len(trial_of({'start_state': bad}, ticks, {}, {}, 'r').state) == n - 1


def test_a_camera_without_an_image_at_every_frame_is_left_out(tmp_path):
    """A bag recording a JPEG every few ticks would repeat a frame until the next: that camera
    is left out and info.json says why; the distinct images of every camera kept come at the
    stated fps. image_size scales what is kept."""
    n = 20
    t = np.arange(n) / FPS
    every_tick = [(s, np.full((48, 64, 3), 10 * k, np.uint8)) for k, s in enumerate(t)]
    sparse = [(s, np.full((48, 64, 3), 99, np.uint8)) for s in t[::5]]
    data = TrialData(
        task='x',
        state=np.zeros((n, 14), np.float32),
        action=np.zeros((n, 14), np.float32),
        time=t,
        images={'cam_head': every_tick, 'cam_left_wrist': sparse},
        meta={'run': 'r', 'trial_id': 'a'},
    )
    summary = write_datasets(tmp_path / 'ds', [data], image_size=(24, 32))
    info = json.loads((tmp_path / 'ds/meta/info.json').read_text())
    assert summary['cameras'] == ['cam_head'] and not summary['environment_state']
    assert 'cam_left_wrist' in info['harness/cameras_left_out']
    assert 'observation.images.cam_left_wrist' not in info['features']
    assert info['features']['observation.images.cam_head']['shape'] == [24, 32, 3]
    path = tmp_path / 'ds/videos/observation.images.cam_head/chunk-000/file-000.mp4'
    with av.open(str(path)) as container:
        means = [float(f.to_ndarray(format='rgb24').mean()) for f in container.decode(video=0)]
    assert len(means) == n == info['total_frames']
    distinct = 1 + sum(abs(b - a) > 3 for a, b in zip(means, means[1:], strict=False))
    assert distinct == n  # one image of its own per frame: the rate info.json states


def test_a_later_trial_without_the_images_the_dataset_holds_is_refused(tmp_path):
    first = trial('a', 6, 40, 'satisfied', 1)
    later = trial('a', 6, 50, 'satisfied', 1)
    later.images = {'cam_head': later.images['cam_head'][::3]}
    with pytest.raises(ExportError, match='no image of its own at every frame for cam_head'):
        write_datasets(tmp_path / 'ds', [first, later])
    no_object = trial('a', 6, 60, 'satisfied', 1)
    no_object.environment = None
    with pytest.raises(ExportError, match='located no object'):
        write_datasets(tmp_path / 'ds2', [first, no_object])


def test_the_environment_state_is_what_the_program_located_first_per_query(tmp_path):
    def record(query, *positions):
        result = [{'located': 'o', 'position': list(p)} for p in positions]
        return json.dumps({'call': 'locate', 'args': {'query': query}, 'result': result}) + '\n'

    log = tmp_path / 'kernel.log'
    log.write_text(
        record('green block')  # nothing found yet
        + 'not json\n[1, 2]\n'
        + record('green block', (0.1, -0.2, 0.78), (5, 5, 5))
        + record('bowl', (0.3, 0.0, 0.77))
        + record('green block', (9, 9, 9))  # asked again after it moved: the first stays
        + json.dumps({'call': 'pick', 'args': {}, 'result': [{'position': [7, 7, 7]}]})
        + '\n'
    )
    located = located_objects(tmp_path)
    assert [q for q, _ in located] == ['green block', 'bowl']
    state = environment_state([p for _, p in located])
    assert state.tolist() == pytest.approx([0.1, -0.2, 0.78, 0.3, 0.0, 0.77, 0, 0, 0, 0])
    assert environment_state([], 2.5)[-1] == 2.5
    log.write_text(record('x', (1, 'nan', 2)) + record('y', (True, 0, 0)))
    assert located_objects(tmp_path) == []


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
          tuple(first['observation.images.cam_head'].shape), float(first['action'][0]),
          tuple(first['observation.environment_state'].shape))
    """
)


def test_lerobot_loads_it(dataset):
    root, _ = dataset
    python = learning_python()
    if python is None:
        pytest.skip(
            'the learning extra is not installed (tools/setup.sh --learning; CI installs it)'
        )
    out = subprocess.run(
        [python, '-c', LOADER, str(root)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[:2] == ['3', '22']
    assert 'pick the cube' in out.stdout and '(3, 48, 64)' in out.stdout and '40.5' in out.stdout
    assert out.stdout.split()[-1] == '(10,)'  # observation.environment_state
