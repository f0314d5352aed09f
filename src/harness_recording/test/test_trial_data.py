"""Trials read back from a run folder whose bag holds one camera at every tick and another
every few ticks: the second is left out of a dataset, so its frames are counted, not decoded."""

import io
import json
from pathlib import Path

import numpy as np
import pytest
from harness_recording.bag import BagRecorder, typestore
from harness_recording.lerobot import export_runs, write_run_dataset
from harness_recording.trial_data import ExportError, run_trials
from PIL import Image

FPS = 25
TOPIC = '/cameras/{}/image_raw/compressed'


def jpeg(value: int) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.full((48, 64, 3), value, np.uint8)).save(out, format='JPEG')
    return out.getvalue()


def frame(stamp: float, data: bytes) -> bytes:
    store = typestore()
    types = store.types
    sec, nanosec = int(stamp), int(round((stamp % 1) * 1e9))
    message = types['sensor_msgs/msg/CompressedImage'](
        header=types['std_msgs/msg/Header'](
            stamp=types['builtin_interfaces/msg/Time'](sec=sec, nanosec=nanosec), frame_id='cam'
        ),
        format='jpeg',
        data=np.frombuffer(data, np.uint8),
    )
    return bytes(store.serialize_cdr(message, 'sensor_msgs/msg/CompressedImage'))


def run_folder(root, n: int):
    """A run of one trial of `n` ticks: cam_head's JPEG at every tick, cam_left_wrist's every
    fifth tick as bytes that are no image (decoding them raises)."""
    run = root / 'run'
    (run / 'ticks').mkdir(parents=True)
    times = 1.0 + np.arange(n) / FPS
    ticks = {'time': times, 'measured': np.zeros((n, 14)), 'command': np.ones((n, 14))}
    np.savez(run / 'ticks' / 'trial.npz', **ticks)
    events = [
        {'type': 'episode', 'task': 'lift_cube', 'layout': 0, 'seed': 0},
        {
            'type': 'trial',
            'trial_id': 'episode',
            'instruction': 'lift',
            'ticks': ['ticks/trial.npz'],
        },
    ]
    (run / 'events.jsonl').write_text(''.join(json.dumps(e) + '\n' for e in events))
    head, wrist = TOPIC.format('cam_head'), TOPIC.format('cam_left_wrist')
    bag = BagRecorder(
        run / 'bag',
        {head: 'sensor_msgs/msg/CompressedImage'} | {wrist: 'sensor_msgs/msg/CompressedImage'},
    )
    for k, t in enumerate(times):
        bag.write(head, frame(t, jpeg(8 * k)), int(t * 1e9))
        if k % 5 == 0:
            bag.write(wrist, frame(t, b'not a jpeg'), int(t * 1e9))
    bag.close()
    return run


def test_a_camera_recorded_every_few_ticks_is_counted_not_decoded(tmp_path):
    run = run_folder(tmp_path, 12)
    (trial,) = run_trials(run)
    assert list(trial.images) == ['cam_head'] and len(trial.images['cam_head']) == 12
    assert trial.images['cam_head'][3][1].shape == (48, 64, 3)
    # 11 frames (the last tick has no action after it): 3 have a wrist frame of their own
    assert len(trial.time) == 11 and trial.stale == {'cam_left_wrist': 8}
    info = json.loads((write_run_dataset(run) / 'meta' / 'info.json').read_text())
    assert list(info['harness/cameras_left_out']) == ['cam_left_wrist']
    assert info['harness/cameras_left_out']['cam_left_wrist'].startswith('8 of 11 frames')
    assert 'observation.images.cam_head' in info['features']


def test_an_export_says_which_cameras_it_left_out_and_what_it_replaced(tmp_path):
    run = run_folder(tmp_path, 12)
    said: list[str] = []
    export_runs([run], tmp_path / 'ds', said.append)
    assert any(
        line.startswith('cam_left_wrist is left out of the dataset: 8 of 11') for line in said
    )
    assert not any('replaced' in line for line in said)
    said.clear()
    export_runs([run], tmp_path / 'ds', said.append)
    assert f'{tmp_path / "ds"} held a LeRobot dataset: it is replaced' in said
    # ... but never a demonstration collection's, which trained runs and gates read
    (tmp_path / 'ds' / 'collection.json').write_text('{}')
    with pytest.raises(ExportError, match='the dataset of a demonstration collection'):
        export_runs([run], tmp_path / 'ds', said.append)
    assert (tmp_path / 'ds' / 'collection.json').is_file()


def test_the_bag_is_opened_once_for_the_dataset_and_the_report(tmp_path, monkeypatch):
    """Finishing a run folder reads its bag once (rosbags parses the metadata and each topic's
    QoS at every open); a bag that cannot be opened is said by each reader as before."""
    from harness_recording.bag import OpenedBag
    from harness_recording.trial_data import camera_frames
    from rosbags.rosbag2 import Reader

    from harness_recording import run_report

    run = run_folder(tmp_path, 12)
    opens = []
    real_open = Reader.open
    monkeypatch.setattr(Reader, 'open', lambda self: opens.append(1) or real_open(self))
    with OpenedBag(run / 'bag') as opened:
        assert sorted(camera_frames(run, opened)) == ['cam_head', 'cam_left_wrist']
        series = run_report.read_series(run / 'bag', opened=opened)
        assert series.note == 'the bag holds no joint states'  # read, and it has none
    assert len(opens) == 1
    (run / 'bag' / 'metadata.yaml').write_text('not: [a bag')
    with OpenedBag(run / 'bag') as opened:
        with pytest.raises(ExportError, match='cannot be read'):
            camera_frames(run, opened)
        assert run_report.read_series(run / 'bag', opened=opened).note.startswith(
            'the bag cannot be read'
        )


@pytest.mark.parametrize(
    'ticks,said',
    [
        (5, 'named by a file or a list of files'),
        (['ticks/missing.npz'], 'is not a file inside the run folder'),
        (['ticks/no_keys.npz'], 'has no time, measured, command'),
        (['ticks/bad_shape.npz'], 'not one time, measured and command row per tick'),
        (['ticks/narrow.npz'], 'rows of 13 and 14 values, not 14'),
    ],
)
def test_ticks_broken_by_hand_are_one_clear_error(tmp_path, ticks, said):
    from harness_recording.trials import load_ticks

    (tmp_path / 'ticks').mkdir()
    np.savez(tmp_path / 'ticks' / 'no_keys.npz', other=np.zeros(3))
    np.savez(
        tmp_path / 'ticks' / 'bad_shape.npz',
        time=np.zeros(4),
        measured=np.zeros((4, 14)),
        command=np.zeros((3, 14)),
    )
    np.savez(
        tmp_path / 'ticks' / 'narrow.npz',
        time=np.zeros(4),
        measured=np.zeros((4, 13)),
        command=np.zeros((4, 14)),
    )
    with pytest.raises(ValueError, match=said):
        load_ticks(tmp_path, ticks)


def test_an_export_that_fails_leaves_the_dataset_it_would_replace_as_it_was(tmp_path):
    """A trial refused half-way through an export (here the second run's, a dataset task that
    is no text) is one clear error, and the dataset at --lerobot is the one there before."""
    run = run_folder(tmp_path, 12)
    export_runs([run], tmp_path / 'ds', print)
    before = (tmp_path / 'ds' / 'meta' / 'info.json').read_text()
    other = run_folder(tmp_path / 'other', 8)
    events = (
        (other / 'events.jsonl').read_text().replace('"instruction": "lift"', '"dataset_task": 7')
    )
    (other / 'events.jsonl').write_text(events)
    with pytest.raises(ExportError, match='its dataset task is 7, not a text'):
        export_runs([run, other], tmp_path / 'ds', print)
    assert (tmp_path / 'ds' / 'meta' / 'info.json').read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ['ds', 'other', 'run']  # none beside


def test_a_ctrl_c_as_the_old_dataset_is_removed_is_said_once_the_new_one_is_in(
    tmp_path, monkeypatch
):
    """A Ctrl-C that comes while the replaced dataset is being removed waits for its removal
    and is then raised as InterruptedAfterWritingError: the dataset at --lerobot is the new
    one (harness export had said it was as it was)."""
    import os
    import shutil
    import signal

    from harness_recording import lerobot

    run = run_folder(tmp_path, 12)
    export_runs([run], tmp_path / 'ds', print)
    (tmp_path / 'ds' / 'old.txt').write_text('the dataset before')
    removed, real_rmtree = [], shutil.rmtree

    def rmtree(path, **kwargs):
        if '.replaced-' in Path(path).name:
            os.kill(os.getpid(), signal.SIGINT)
        real_rmtree(path, **kwargs)
        removed.append(Path(path).name)

    monkeypatch.setattr(lerobot.shutil, 'rmtree', rmtree)
    # Python's own Ctrl-C handler (a test runner may start this process with SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(lerobot.InterruptedAfterWritingError):
            export_runs([run], tmp_path / 'ds', print)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert any(name.startswith('.ds.replaced-') for name in removed)
    assert (tmp_path / 'ds' / 'meta' / 'info.json').is_file()
    assert not (tmp_path / 'ds' / 'old.txt').exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ['ds', 'run']  # none beside


def test_an_export_replaces_the_folder_it_checked(tmp_path, monkeypatch):
    """The folder checked is the folder replaced: 'link/..' is the dataset the link's target
    is in, not the folder the text names; the working folder is never replaced; a first
    export says it replaced nothing."""
    run = run_folder(tmp_path, 12)
    said: list[str] = []
    export_runs([run], tmp_path / 'ds', said.append)
    assert not any('replaced' in line for line in said)
    (tmp_path / 'work').mkdir()
    (tmp_path / 'work' / 'precious.txt').write_text('mine')
    monkeypatch.chdir(tmp_path / 'work')
    (tmp_path / 'work' / 'link').symlink_to(tmp_path / 'ds' / 'meta')
    export_runs([run], Path('link/..'), said.append)  # the dataset at ds, replaced
    assert (tmp_path / 'work' / 'precious.txt').read_text() == 'mine'
    with pytest.raises(ExportError, match='is the working folder or above it'):
        export_runs([run], Path('.'), said.append)


def test_an_export_to_a_symbolic_link_is_refused(tmp_path):
    run = run_folder(tmp_path, 12)
    (tmp_path / 'elsewhere').mkdir()
    (tmp_path / 'link').symlink_to(tmp_path / 'elsewhere')
    with pytest.raises(ExportError, match='is a symbolic link: name the folder itself'):
        export_runs([run], tmp_path / 'link', print)
    assert list((tmp_path / 'elsewhere').iterdir()) == []


def test_a_bag_damaged_in_the_middle_is_said_not_read_short(tmp_path):
    """rosbags stops without a word at a damaged record: the readers count what they read
    against the bag's metadata and say what is missing (here 300 bytes zeroed mid-file)."""
    from harness_recording.bag import shortfall

    run = run_folder(tmp_path, 30)
    (mcap,) = (run / 'bag').glob('*.mcap')
    data = bytearray(mcap.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 300] = bytes(300)
    mcap.write_bytes(bytes(data))
    with pytest.raises(ExportError, match=r'the bag is damaged: \d+ of its 36 messages could be'):
        run_trials(run)
    assert shortfall(36, 36) == '' and shortfall(5, 36).startswith('the bag is damaged: 5 of')


def test_a_bag_that_did_not_close_or_holds_nothing_is_said_by_replay_and_report(tmp_path):
    from harness_recording.replay import ReplayError, bag_of
    from harness_recording.replay_node import replay

    from harness_recording import run_report

    run = run_folder(tmp_path, 4)
    (run / 'bag' / 'metadata.yaml').unlink()  # as when the episode's process was killed
    with pytest.raises(ReplayError, match='has its MCAP file but no metadata.yaml: the recording'):
        bag_of(run)
    with pytest.raises(ReplayError, match='has its MCAP file but no metadata.yaml'):
        bag_of(run / 'bag')  # named directly
    assert 'the recording did not close' in run_report.read_series(run / 'bag').note
    empty = BagRecorder(tmp_path / 'empty', {'/chatter': 'std_msgs/msg/String'})
    empty.close()
    with pytest.raises(ReplayError, match='holds no messages: nothing to replay'):
        replay(tmp_path / 'empty', loop=True)  # (it spun, saying "published 0 messages")


def test_an_export_of_a_run_whose_bag_did_not_close_keeps_its_trials_without_video(tmp_path):
    run = run_folder(tmp_path, 12)
    (run / 'bag' / 'metadata.yaml').unlink()  # (its server was killed: the bag never closed)
    said: list[str] = []
    summary = export_runs([run], tmp_path / 'ds', said.append)
    assert summary['episodes'] == 1 and summary['cameras'] == []
    assert any('the recording did not close' in line and 'without video' in line for line in said)
    # ... but not beside runs with video, whichever comes first (a dataset's first episode
    # chose its cameras: the others' videos were dropped without a word)
    other = run_folder(tmp_path / 'other', 12)
    for runs in ([run, other], [other, run]):
        with pytest.raises(ExportError, match='1 of the 2 trials have no camera frames'):
            export_runs(runs, tmp_path / 'mixed', said.append)


def test_a_bag_whose_records_raise_mid_file_is_a_damaged_bag_error_naming_where(tmp_path):
    """rosbags raises (OverflowError, ReaderError: Truncated record) at some damaged records:
    replay printed a traceback where its help promises it says the shortfall and exits 1."""
    from harness_recording.replay import DamagedBagError, bag_of, messages

    run = run_folder(tmp_path, 30)
    (mcap,) = (run / 'bag').glob('*.mcap')
    data = bytearray(mcap.read_bytes())
    third = len(data) // 3
    data[third : third + 2000] = bytes(b ^ 0xFF for b in data[third : third + 2000])
    mcap.write_bytes(bytes(data))
    with pytest.raises(DamagedBagError, match=r'is damaged after message \d+: '):
        list(messages(bag_of(run)))


def _cut_in_half(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _bytes_flipped(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[200:220] = bytes(b ^ 0xFF for b in data[200:220])
    path.write_bytes(bytes(data))


def _text(path: Path) -> None:
    path.write_text('time,measured,command\n')


def _not_finite(path: Path) -> None:
    ticks = dict(np.load(path))
    ticks['measured'][3, 2] = np.nan
    np.savez(path, **ticks)


@pytest.mark.parametrize(
    'damage,said',
    [
        # (a file cut short by a full disk or a kill: a zipfile traceback)
        (_cut_in_half, 'ticks/trial.npz is not a readable .npz archive of ticks'),
        (_bytes_flipped, 'ticks/trial.npz is not a readable .npz archive of ticks'),
        # (numpy's words advised loading it unsafely, with pickle)
        (_text, 'ticks/trial.npz is not an .npz archive of ticks'),
        # (exported: NaN states in the dataset, its stats NaN)
        (_not_finite, 'ticks/trial.npz: its measured holds values that are not finite'),
    ],
)
def test_a_damaged_ticks_file_is_one_error_naming_it(tmp_path, damage, said):
    run = run_folder(tmp_path, 30)
    damage(run / 'ticks' / 'trial.npz')
    with pytest.raises(ExportError) as exc:
        run_trials(run)
    assert said in str(exc.value) and "trial 'episode'" in str(exc.value), exc.value
    assert 'pickle' not in str(exc.value)


def test_a_camera_frame_that_does_not_decode_is_one_error_naming_it(tmp_path):
    run = run_folder(tmp_path, 30)
    (mcap,) = (run / 'bag').glob('*.mcap')
    # the head camera's frames, each a JPEG, made unreadable in place (a PIL traceback)
    data = mcap.read_bytes().replace(b'\xff\xd8\xff', b'\x00\x00\x00')
    mcap.write_bytes(data)
    with pytest.raises(ExportError, match=r'the cam_head frame at [\d.]+ s does not decode'):
        run_trials(run)


def test_a_bag_that_is_a_link_to_another_runs_is_not_read_as_this_runs(tmp_path):
    from harness_recording.replay import ReplayError, topics

    run = run_folder(tmp_path, 12)
    other = tmp_path / 'other'
    (run / 'bag').rename(other)
    (run / 'bag').symlink_to(other)
    with pytest.raises(ExportError, match='is a symbolic link'):
        run_trials(run)
    with pytest.raises(ReplayError, match='is a symbolic link'):
        topics(run / 'bag')
    # ... and so is a bag whose MCAP file is a link
    (run / 'bag').unlink()
    (run / 'bag').mkdir()
    for f in other.iterdir():
        (run / 'bag' / f.name).symlink_to(f)
    with pytest.raises(ExportError, match='is a symbolic link'):
        run_trials(run)
