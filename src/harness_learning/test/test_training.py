"""`harness policy train`'s own part (pure, no torch): the dataset check's one-line errors, the
dataset view that holds only what the policy sees, LeRobot's arguments (fresh and resumed),
and progress from LeRobot's log lines."""

import json
from pathlib import Path

import pytest
from demos import FPS, demo
from harness_learning.training import (
    CHECKPOINT,
    Progress,
    TrainError,
    TrainPlan,
    check_dataset,
    lerobot_arguments,
    plan_problem,
    train,
    training_view,
)
from harness_recording.lerobot import write_datasets


@pytest.fixture(scope='module')
def dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp('demos') / 'dataset'
    write_datasets(root, [demo(12, k) for k in range(3)])
    return root


def test_the_dataset_facts_name_the_query_each_task_was_located_with(dataset):
    facts = check_dataset(dataset)
    assert (facts.episodes, facts.frames, facts.fps) == (3, 36, FPS)
    assert facts.tasks == {'Pick up the red cube.': ['red cube']}
    assert facts.environment and facts.cameras == []
    assert check_dataset(dataset, ('cam_head',)).cameras == ['cam_head']


def test_an_out_that_is_a_file_is_one_line(dataset, tmp_path):
    """(FileExistsError from mkdir had been a traceback.)"""
    (tmp_path / 'afile').write_text('')
    with pytest.raises(TrainError, match='afile cannot be made a folder: it is a file'):
        train(TrainPlan(dataset, tmp_path / 'afile', steps=1), 'python')


def test_a_run_folder_another_process_trains_in_is_refused(dataset, tmp_path):
    """Two trainings into one --out had both run, the second resuming the first's checkpoint,
    and written one record."""
    import fcntl

    from harness_learning.training import LOCK

    out = tmp_path / 'run'
    out.mkdir()
    with open(out / LOCK, 'a') as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(TrainError, match='is being trained by another process'):
            train(TrainPlan(dataset, out, steps=1), 'python')


def test_a_dataset_missing_a_part_is_one_line(dataset, tmp_path):
    """(Each had been a traceback, or Hugging Face's offline error, from inside LeRobot.)"""
    import shutil

    for part, said in (
        ('meta/stats.json', 'has no meta/stats.json'),
        ('meta/episodes', 'has no meta/episodes'),
    ):
        broken = tmp_path / part.replace('/', '_')
        shutil.copytree(dataset, broken)
        target = broken / part
        shutil.rmtree(target) if target.is_dir() else target.unlink()
        with pytest.raises(TrainError, match=said):
            check_dataset(broken)


def test_what_cannot_train_is_one_line(dataset, tmp_path):
    with pytest.raises(TrainError, match='is not a LeRobot dataset'):
        check_dataset(tmp_path)
    (tmp_path / 'meta').mkdir()
    (tmp_path / 'meta/info.json').write_text('{"codebase_version": "v2.1"}')
    with pytest.raises(TrainError, match="version 'v2.1', not v3.0"):
        check_dataset(tmp_path)
    (tmp_path / 'meta/info.json').write_text('not json')
    with pytest.raises(TrainError, match='is not JSON'):
        check_dataset(tmp_path)
    info = json.loads((dataset / 'meta/info.json').read_text())
    (tmp_path / 'meta/info.json').write_text(json.dumps(info | {'total_episodes': 0}))
    with pytest.raises(TrainError, match='holds no episodes'):
        check_dataset(tmp_path)
    with pytest.raises(TrainError, match='has no camera cam_left_wrist; cameras: cam_head'):
        check_dataset(dataset, ('cam_left_wrist',))
    blind = tmp_path / 'blind'
    write_datasets(blind, [demo(8, 0, environment=False)])
    with pytest.raises(TrainError, match='cannot find the object'):
        check_dataset(blind)
    other = dict(info)
    other['features'] = dict(info['features'])
    other['features']['action'] = dict(info['features']['action'], shape=[7])
    (tmp_path / 'meta/info.json').write_text(json.dumps(other))
    with pytest.raises(TrainError, match='action must be 14 values'):
        check_dataset(tmp_path)


def broken_copy(dataset: Path, folder: Path, name: str) -> Path:
    import shutil

    return Path(shutil.copytree(dataset, folder / name))


def test_stats_that_would_train_nan_weights_are_one_line(dataset, tmp_path):
    """(A NaN mean trained every weight to NaN, and the record said done.)"""
    for name, change, said in (
        ('nan', lambda st: st['observation.state'].update(mean=[float('nan')] * 14), 'finite'),
        ('negative', lambda st: st['action'].update(std=[-1.0] * 14), 'finite and >= 0'),
        ('missing', lambda st: st.pop('action'), 'has no stats of action'),
    ):
        broken = broken_copy(dataset, tmp_path, name)
        stats = json.loads((broken / 'meta/stats.json').read_text())
        change(stats)
        (broken / 'meta/stats.json').write_text(json.dumps(stats))
        with pytest.raises(TrainError, match=said):
            check_dataset(broken)


def test_frames_that_cannot_be_read_or_are_not_at_the_fps_are_one_line(dataset, tmp_path):
    truncated = broken_copy(dataset, tmp_path, 'truncated')
    (part,) = sorted((truncated / 'data').glob('*/*.parquet'))[:1]
    part.write_bytes(part.read_bytes()[:100])
    with pytest.raises(TrainError, match=r'file-000.parquet cannot be read: .*Parquet'):
        check_dataset(truncated)
    episodes = broken_copy(dataset, tmp_path, 'episodes')
    (meta,) = sorted((episodes / 'meta/episodes').glob('*/*.parquet'))[:1]
    meta.write_bytes(b'PAR1 not really')
    with pytest.raises(TrainError, match='cannot be read'):
        check_dataset(episodes)
    slow = broken_copy(dataset, tmp_path, 'slow')
    info = json.loads((slow / 'meta/info.json').read_text())
    (slow / 'meta/info.json').write_text(json.dumps(info | {'fps': FPS / 2}))
    with pytest.raises(TrainError, match=f'timestamps step {1 / FPS:g} s, not 1/fps'):
        check_dataset(slow)
    short = broken_copy(dataset, tmp_path, 'short')
    (short / 'meta/info.json').write_text(json.dumps(info | {'total_frames': 99}))
    with pytest.raises(TrainError, match='data holds 36 frames; meta/info.json says 99'):
        check_dataset(short)


def test_a_video_cut_short_is_one_line(dataset, tmp_path):
    cut = broken_copy(dataset, tmp_path, 'cut')
    video = sorted((cut / 'videos').rglob('*.mp4'))[0]
    video.write_bytes(video.read_bytes()[:64])
    camera = video.relative_to(cut / 'videos').parts[0].removeprefix('observation.images.')
    with pytest.raises(TrainError, match='cannot be read as a video'):
        check_dataset(cut, (camera,))


@pytest.mark.parametrize(
    'changes,said',
    [
        ({'width': 7}, 'a multiple of 8'),
        ({'width': 1_000_000}, 'from 8 to 4096'),
        ({'threads': 10_000}, '--threads must be 1 to'),
    ],
)
def test_options_that_cannot_train_are_refused_before_lerobot(dataset, tmp_path, changes, said):
    assert plan_problem(TrainPlan(dataset, tmp_path / 'run')) == ''
    assert said in plan_problem(TrainPlan(dataset, tmp_path / 'run', **changes))


def test_an_out_that_is_another_folder_or_the_dataset_is_refused(dataset, tmp_path):
    other = tmp_path / 'other'
    other.mkdir()
    (other / 'notes.txt').write_text('mine')
    assert 'holds other files' in plan_problem(TrainPlan(dataset, other))
    for inside in (dataset, dataset / 'runs' / 'one'):
        assert 'is in the dataset' in plan_problem(TrainPlan(dataset, inside))
    with pytest.raises(TrainError, match='holds other files'):
        train(TrainPlan(dataset, other, steps=1), 'python')
    assert (other / 'notes.txt').read_text() == 'mine' and len(list(other.iterdir())) == 1


def test_a_loss_that_is_no_number_stops_the_training_failed(dataset, tmp_path):
    """(Trained on, it ended 'done' with every weight NaN, and was served.) A stand-in for
    LeRobot's process that logs a NaN loss and would go on for a minute."""
    from harness_learning.training import RECORD

    lerobot = tmp_path / 'lerobot-stand-in'
    lerobot.write_text(
        '#!/bin/sh\necho "INFO ot_train.py:435 step:50 smpl:400 ep:4 epch:2 loss:nan grdn:nan"\n'
        'exec sleep 60\n'
    )
    lerobot.chmod(0o755)
    out = tmp_path / 'run'
    with pytest.raises(TrainError, match='the loss became nan at step 50: the weights are lost'):
        train(TrainPlan(dataset, out, steps=100, log_every=50), str(lerobot), lambda _: None)
    assert json.loads((out / RECORD).read_text())['status'] == 'failed'


def test_the_view_holds_only_the_features_the_policy_sees(dataset, tmp_path):
    view = training_view(dataset, (), tmp_path / 'view')
    info = json.loads((view / 'meta/info.json').read_text())
    assert not any(k.startswith('observation.images.') for k in info['features'])
    assert info['video_path'] is None
    assert 'observation.images.cam_head' not in json.loads((view / 'meta/stats.json').read_text())
    assert (view / 'data').resolve() == (dataset / 'data').resolve()
    assert (view / 'meta/tasks.parquet').is_file() and not (view / 'videos').exists()
    seeing = training_view(dataset, ('cam_head',), tmp_path / 'view2')
    assert (
        'observation.images.cam_head'
        in json.loads((seeing / 'meta/info.json').read_text())['features']
    )
    assert (seeing / 'videos/observation.images.cam_head').is_dir()


def test_a_stopped_run_resumes_from_its_last_checkpoint(dataset, tmp_path):
    plan = TrainPlan(dataset, tmp_path / 'run', steps=40)
    fresh = lerobot_arguments(plan, tmp_path / 'view')
    assert '--policy.type=act' in fresh and '--policy.device=cpu' in fresh
    assert '--policy.pretrained_backbone_weights=null' in fresh  # no hub weights here
    assert f'--output_dir={tmp_path / "run" / "lerobot"}' in fresh
    (tmp_path / 'run/lerobot').mkdir(parents=True)
    with pytest.raises(TrainError, match='without a checkpoint to resume from'):
        lerobot_arguments(plan, tmp_path / 'view')
    config = tmp_path / 'run' / CHECKPOINT / 'train_config.json'
    config.parent.mkdir(parents=True)
    config.write_text('{}')
    assert lerobot_arguments(plan, tmp_path / 'view') == [
        '--resume=true',
        f'--config_path={config}',
        '--steps=40',
    ]


def test_progress_reads_lerobot_log_lines():
    progress = Progress(TrainPlan(Path('d'), Path('o'), steps=200, log_every=50))
    assert progress.line('Training:  10%| 20/200 [00:01<00:09]') is None
    line = progress.line(
        'INFO 2026-12-05 ot_train.py:435 step:50 smpl:400 ep:4 epch:2.19 loss:0.313 grdn:18.6'
    )
    assert line.startswith('step 50/200  loss 0.3130') and 'min left' in line
    assert progress.losses == [(50, 0.313)]
    # a loss that is no number is read (the training then stops, failed)
    progress.line('INFO ot_train.py:435 step:100 smpl:800 ep:8 epch:4.4 loss:nan grdn:nan')
    assert progress.losses[-1][0] == 100 and progress.losses[-1][1] != progress.losses[-1][1]


def test_a_served_policys_actions_are_bounded_to_the_command_layouts_range():
    """Where the demonstrations sat at a bound (an idle arm at joint limit 0, an open gripper)
    a regression lands a hair outside; the policy's output is its action space: the joint
    limits and the grippers' [0, 1]. Nothing more: the shield judges jumps and collisions."""
    from arx_x5_description.embodiment import load_embodiment
    from harness_learning.learned_policy import action_bounds

    emb = load_embodiment()
    low, high = action_bounds(emb)
    assert low.shape == high.shape == (14,)
    assert list(low[:6]) == pytest.approx(emb.lower) and list(high[7:13]) == pytest.approx(
        emb.upper
    )
    assert (low[6], high[6], low[13], high[13]) == (0.0, 1.0, 0.0, 1.0)
