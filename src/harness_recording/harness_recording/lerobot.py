"""Trials as training data: a LeRobot v3.0 dataset written from run folders, with pyarrow and
PyAV only (no lerobot, no torch).

Each trial of a run (a `trial` line of events.jsonl: the episode of `harness run`, an action of
`harness mcp`) is one dataset episode, its frames at the control rate, in LeRobot's convention:
frame t holds what was observed at tick t and the action commanded after it. From the trial's
ticks (harness_recording.trials: each the command of a tick and the state measured after it),
frame 0 is the trial's start state (measured before its first tick) with the first tick's
command, frame t `observation.state` = the 14 joints and grippers measured after tick t and
`action` = the 14 commanded at tick t + 1 (the command layout): a trial of N ticks gives N
frames (N - 1 when it was recorded without its start state: then frame 0 is its first tick's).
`observation.environment_state`, where every trial has one, is the positions (x, y, z, in m) of
the objects the trial's program located (the harness's pixel perception, `locate`: the first
result of each distinct query, in the order first asked, up to three, zeros after; never the
simulator's ground truth), then the seconds since the trial's first observation: 10 values.
Each camera is an H.264 video of the JPEG frames the bag holds, one per frame: a camera is in
the dataset only when the bag has its image at every tick (`worker.compressed_every_ticks: 1`,
as `harness demos` records), so that the distinct images come at the fps info.json states;
otherwise info.json's `harness/cameras_left_out` says why it is not. `image_size` scales every
camera to the policy's resolution. `meta/episodes` carries, beside LeRobot's columns, the run's
task, layout, seed, dispatcher, executor and its version, and the verifier's verdict, tier and
evidence. `demos/` is a second dataset of the trials a tier-1 or tier-2 verifier judged
satisfied.

Layout (LeRobot's v3.0 paths): meta/info.json, meta/stats.json, meta/tasks.parquet,
meta/episodes/chunk-000/file-000.parquet, data/chunk-CCC/file-FFF.parquet (one file per
episode), videos/observation.images.CAM/chunk-CCC/file-FFF.mp4 (one file per episode).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from arx_x5_description.embodiment import load_embodiment
from harness_types.process import interrupts_held

from harness_recording.trial_data import (
    ENVIRONMENT_NAMES,
    ENVIRONMENT_WIDTH,
    MAX_LOCATED,
    ExportError,
    TrialData,
    dataset_fps,
    run_trials,
    stale_frames,
)

if TYPE_CHECKING:
    from harness_recording.bag import OpenedBag

CODEBASE_VERSION = 'v3.0'
MAX_STATS_FRAMES = 200  # camera frames (their sampled pixels) the image stats keep
CHUNK_SIZE = 1000
ROBOT_TYPE = 'arx_x5_dual'


def _frames_at(frames: list[tuple[float, np.ndarray]], times: np.ndarray) -> list[np.ndarray]:
    """For each of `times`, the latest camera frame at or before it (the first one before
    any); `frames` in time order."""
    shown = np.searchsorted([ft for ft, _ in frames], np.asarray(times) + 1e-6, side='right')
    return [frames[max(int(n) - 1, 0)][1] for n in shown]


def _scaled(frames: list[tuple[float, np.ndarray]], size: tuple[int, int] | None) -> list:
    """`frames` at `size` (h, w), area-averaged (as a camera of that resolution would see)."""
    if size is None:
        return frames
    from PIL import Image

    h, w = size
    return [
        (
            t,
            rgb
            if rgb.shape[:2] == (h, w)
            else np.asarray(Image.fromarray(rgb).resize((w, h), Image.Resampling.BOX)),
        )
        for t, rgb in frames
    ]


def _write_video(path: Path, images: list[np.ndarray], fps: int, size: tuple[int, int]) -> None:
    """One frame per entry of `images` (H.264, yuv420p), each cropped to `size` (h, w). An
    array that comes again (the frame shown at or before a tick, _frames_at) is converted to
    YUV once."""
    import av

    path.parent.mkdir(parents=True, exist_ok=True)
    h, w = size
    with av.open(str(path), mode='w') as container:
        stream = container.add_stream('libx264', rate=fps)
        stream.width, stream.height = w - w % 2, h - h % 2
        stream.pix_fmt = 'yuv420p'
        # A keyframe every 2 frames: LeRobot seeks to single frames; held frames cost little.
        # One thread: x264's frame threads took 8-25% more CPU (two measurements) for no
        # shorter wall time here (episodes run side by side in a bench).
        stream.options = {'preset': 'ultrafast', 'crf': '23', 'g': '2', 'threads': '1'}
        previous, frame = None, None
        for pts, rgb in enumerate(images):
            if rgb is not previous:
                crop = np.ascontiguousarray(rgb[: stream.height, : stream.width])
                frame = av.VideoFrame.from_ndarray(crop, format='rgb24').reformat(format='yuv420p')
                previous = rgb
            frame.pts = pts
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)


QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)


def _stats(x: np.ndarray) -> dict:
    """LeRobot's stats of samples `x` (N x D): min, max, mean, std, count and the quantiles
    its normalisation modes use (q01, q10, q50, q90, q99)."""
    out = {
        'min': x.min(axis=0).tolist(),
        'max': x.max(axis=0).tolist(),
        'mean': x.mean(axis=0).tolist(),
        'std': x.std(axis=0).tolist(),
        'count': [int(len(x))],
    }
    # One partition for all five (each call sorted again); q in x's dtype, as a lone Python
    # float is taken, so the values are those of one call per quantile to the bit.
    dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64
    values = np.quantile(x, np.asarray(QUANTILES, dtype=dtype), axis=0)
    for q, value in zip(QUANTILES, values, strict=True):
        out[f'q{round(q * 100):02d}'] = value.tolist()
    return out


def _image_stats(pixels: list[np.ndarray], frames: int) -> dict:
    """Per-channel stats of [0, 1] pixels, shaped (3, 1, 1) as LeRobot keeps them, from rows of
    sampled pixels of the distinct camera frames; `frames` is how many frames show them."""
    stats = _stats(np.concatenate(pixels).astype(np.float32) / 255.0)
    shaped = {k: [[[float(c)]] for c in v] for k, v in stats.items() if k != 'count'}
    return shaped | {'count': [int(frames)]}


def _tasks_table(tasks: list[str]):
    """meta/tasks.parquet as pandas writes a frame indexed by the task string (LeRobot reads
    it with pandas: `tasks.loc[task].task_index`)."""
    import pyarrow as pa

    pandas_meta = {
        'index_columns': ['__index_level_0__'],
        'column_indexes': [
            {
                'name': None,
                'field_name': None,
                'pandas_type': 'unicode',
                'numpy_type': 'object',
                'metadata': {'encoding': 'UTF-8'},
            }
        ],
        'columns': [
            {
                'name': 'task_index',
                'field_name': 'task_index',
                'pandas_type': 'int64',
                'numpy_type': 'int64',
                'metadata': None,
            },
            {
                'name': None,
                'field_name': '__index_level_0__',
                'pandas_type': 'unicode',
                'numpy_type': 'object',
                'metadata': None,
            },
        ],
        'creator': {'library': 'pyarrow', 'version': pa.__version__},
        'pandas_version': '2.2.0',
    }
    schema = pa.schema(
        [('task_index', pa.int64()), ('__index_level_0__', pa.string())],
        metadata={b'pandas': json.dumps(pandas_meta).encode()},
    )
    return pa.table(
        {'task_index': list(range(len(tasks))), '__index_level_0__': tasks}, schema=schema
    )


class DatasetWriter:
    """A LeRobot v3.0 dataset at `root`, written one trial at a time: `add(trial)` writes its
    frames and videos and then the whole of meta/ again, so the dataset on disk is complete
    after every trial. With `demos`, root/demos is a second dataset of the trials a tier-1 or
    tier-2 verifier satisfied (their videos copied, not encoded again). The camera set and
    whether there is an environment state are the first trial's: the cameras it has at every
    frame (a camera recorded less often is left out, and info.json says so); a later trial
    without one of them is refused (ExportError). `image_size` (h, w): every camera scaled."""

    def __init__(
        self, root: Path, demos: bool = False, image_size: tuple[int, int] | None = None
    ) -> None:
        import pyarrow as pa

        emb = load_embodiment()
        self.fps = dataset_fps()
        self.names = list(emb.command_layout)
        self.image_size = image_size
        self.root = Path(root)
        if self.root.exists():
            shutil.rmtree(self.root)
        (self.root / 'meta/episodes/chunk-000').mkdir(parents=True)
        self.demos = DatasetWriter(self.root / 'demos', image_size=image_size) if demos else None
        self.cameras: list[str] | None = None
        self.left_out: dict[str, str] = {}  # camera -> why it is not in the dataset
        self.environment: bool | None = None
        self.environments: list[np.ndarray] = []
        self.shapes: dict[str, tuple[int, int]] = {}
        self.tasks: list[str] = []
        self.episodes: list[dict] = []
        self.states: list[np.ndarray] = []
        self.actions: list[np.ndarray] = []
        self.pixels: dict[str, list[np.ndarray]] = {}
        self.frames = 0
        self.vec = pa.list_(pa.float32(), 14)

    def add(self, trial: TrialData, videos: dict[str, Path] | None = None) -> dict[str, Path]:
        """Write `trial` as the next episode; returns its video files by camera (`videos`:
        files to copy instead of encoding)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        images = {c: _scaled(fs, self.image_size) for c, fs in trial.images.items() if fs}
        stale = {c: stale_frames(fs, trial.time, self.fps) for c, fs in images.items()}
        stale |= trial.stale
        if self.cameras is None:
            self.cameras = sorted(c for c in stale if not stale[c])
            self.left_out = {
                c: f'{stale[c]} of {len(trial.time)} frames have no image of their own: the bag '
                'holds a frame every few ticks (worker.compressed_every_ticks: 1 records every '
                'tick)'
                for c in sorted(stale)
                if stale[c]
            }
            for c in self.cameras:
                h, w = images[c][0][1].shape[:2]
                self.shapes[c] = (h - h % 2, w - w % 2)
                self.pixels[c] = []
            self.environment = trial.environment is not None
        lacking = [c for c in self.cameras if stale.get(c, len(trial.time))]
        if lacking and not videos:
            raise ExportError(
                f'trial {trial.meta.get("trial_id", "?")} of {trial.meta.get("run", "?")} has no '
                f'image of its own at every frame for {", ".join(lacking)}, which the dataset '
                'holds at every frame'
            )
        if self.environment and trial.environment is None:
            raise ExportError(
                f'trial {trial.meta.get("trial_id", "?")} of {trial.meta.get("run", "?")} located '
                'no object: the dataset holds observation.environment_state for every frame'
            )
        ep, n = len(self.episodes), len(trial.state)
        if trial.task not in self.tasks:
            self.tasks.append(trial.task)
        chunk, file = divmod(ep, CHUNK_SIZE)
        columns = {}
        if self.environment:
            env = np.zeros((n, ENVIRONMENT_WIDTH), np.float32)
            env[:, : 3 * MAX_LOCATED] = np.asarray(trial.environment, np.float32)[: 3 * MAX_LOCATED]
            env[:, -1] = np.asarray(trial.time, np.float32) - float(trial.time[0])
            columns['observation.environment_state'] = pa.array(
                list(env), pa.list_(pa.float32(), ENVIRONMENT_WIDTH)
            )
            self.environments.append(env)
        table = pa.table(
            columns
            | {
                'observation.state': pa.array(list(trial.state), type=self.vec),
                'action': pa.array(list(trial.action), type=self.vec),
                'timestamp': pa.array(np.arange(n, dtype=np.float32) / self.fps, pa.float32()),
                'frame_index': pa.array(np.arange(n), type=pa.int64()),
                'episode_index': pa.array(np.full(n, ep), type=pa.int64()),
                'index': pa.array(np.arange(self.frames, self.frames + n), type=pa.int64()),
                'task_index': pa.array(np.full(n, self.tasks.index(trial.task)), type=pa.int64()),
            }
        )
        data = self.root / f'data/chunk-{chunk:03d}/file-{file:03d}.parquet'
        data.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, data)
        row = {
            'episode_index': ep,
            'tasks': [trial.task],
            'length': n,
            'data/chunk_index': chunk,
            'data/file_index': file,
            'dataset_from_index': self.frames,
            'dataset_to_index': self.frames + n,
        }
        written: dict[str, Path] = {}
        for c in self.cameras:
            key = f'observation.images.{c}'
            video = self.root / f'videos/{key}/chunk-{chunk:03d}/file-{file:03d}.mp4'
            shown = images.get(c) or []
            if videos and c in videos:
                video.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(videos[c], video)
            else:
                h, w = self.shapes[c]
                _write_video(video, _frames_at(shown, trial.time), self.fps, (h, w))
            written[c] = video
            self.pixels[c] += [rgb[::4, ::4].reshape(-1, 3) for _, rgb in shown[:50]]
            del self.pixels[c][:-MAX_STATS_FRAMES]  # a long session's stats stay bounded
            row |= {
                f'videos/{key}/chunk_index': chunk,
                f'videos/{key}/file_index': file,
                f'videos/{key}/from_timestamp': 0.0,
                f'videos/{key}/to_timestamp': n / self.fps,
            }
        row |= {'meta/episodes/chunk_index': 0, 'meta/episodes/file_index': 0}
        row |= {f'harness/{k}': v for k, v in trial.meta.items() if k != 'verifier_evidence'}
        row['harness/verifier_evidence'] = [str(x) for x in trial.meta.get('verifier_evidence', [])]
        self.episodes.append(row)
        self.states.append(trial.state)
        self.actions.append(trial.action)
        self.frames += n
        self._write_meta()
        if self.demos is not None and trial.satisfied:
            self.demos.add(trial, written)
        return written

    def _write_meta(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        features: dict = {}
        if self.environment:
            features['observation.environment_state'] = {
                'dtype': 'float32',
                'shape': [ENVIRONMENT_WIDTH],
                'names': ENVIRONMENT_NAMES,
            }
        features |= {
            'observation.state': {'dtype': 'float32', 'shape': [14], 'names': self.names},
            'action': {'dtype': 'float32', 'shape': [14], 'names': self.names},
        }
        for c in self.cameras or []:
            h, w = self.shapes[c]
            features[f'observation.images.{c}'] = {
                'dtype': 'video',
                'shape': [h, w, 3],
                'names': ['height', 'width', 'channels'],
                'info': {
                    'video.height': h,
                    'video.width': w,
                    'video.codec': 'h264',
                    'video.pix_fmt': 'yuv420p',
                    'video.is_depth_map': False,
                    'video.fps': self.fps,
                    'video.channels': 3,
                    'has_audio': False,
                },
            }
        for key, dtype in (
            ('timestamp', 'float32'),
            ('frame_index', 'int64'),
            ('episode_index', 'int64'),
            ('index', 'int64'),
            ('task_index', 'int64'),
        ):
            features[key] = {'dtype': dtype, 'shape': [1], 'names': None}
        n = len(self.episodes)
        info = {
            'codebase_version': CODEBASE_VERSION,
            'robot_type': ROBOT_TYPE,
            'total_episodes': n,
            'total_frames': self.frames,
            'total_tasks': len(self.tasks),
            'chunks_size': CHUNK_SIZE,
            'data_files_size_in_mb': 100,
            'video_files_size_in_mb': 200,
            'fps': self.fps,
            'splits': {'train': f'0:{n}'},
            'data_path': 'data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet',
            'video_path': (
                'videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4'
                if self.cameras
                else None
            ),
            'features': features,
            'harness/cameras_left_out': self.left_out,
        }
        stats = {}
        if self.episodes:
            stats['observation.state'] = _stats(np.concatenate(self.states))
            stats['action'] = _stats(np.concatenate(self.actions))
            if self.environment:
                stats['observation.environment_state'] = _stats(np.concatenate(self.environments))
            for c in self.cameras or []:
                if self.pixels[c]:
                    stats[f'observation.images.{c}'] = _image_stats(self.pixels[c], self.frames)
        # each file replaced whole, so a reader never sees half of one
        _replace(self.root / 'meta/info.json', json.dumps(info, indent=2) + '\n')
        _replace(self.root / 'meta/stats.json', json.dumps(stats, indent=2) + '\n')
        pq.write_table(_tasks_table(self.tasks), self.root / 'meta/tasks.parquet.tmp')
        (self.root / 'meta/tasks.parquet.tmp').replace(self.root / 'meta/tasks.parquet')
        if self.episodes:
            part = self.root / 'meta/episodes/chunk-000/file-000.parquet'
            pq.write_table(pa.Table.from_pylist(self.episodes), part.with_suffix('.tmp'))
            part.with_suffix('.tmp').replace(part)

    def summary(self) -> dict:
        return {
            'episodes': len(self.episodes),
            'frames': self.frames,
            'cameras': list(self.cameras or []),
            'demos': len(self.demos.episodes) if self.demos is not None else 0,
            'cameras_left_out': dict(self.left_out),
            'environment_state': bool(self.environment),
        }


def _replace(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + '.tmp')
    tmp.write_text(text)
    tmp.replace(path)


def write_datasets(
    root: Path,
    trials: list[TrialData],
    say=lambda _m: None,
    image_size: tuple[int, int] | None = None,
) -> dict:
    """`root` with every trial and `root/demos` with those a tier 1-2 verifier satisfied."""
    writer = DatasetWriter(root, demos=True, image_size=image_size)
    for trial in trials:
        writer.add(trial)
        say(f'{trial.meta.get("run")} {trial.meta.get("trial_id")}: {len(trial.state)} frames')
    return writer.summary()


def write_run_dataset(run: Path, opened: OpenedBag | None = None) -> Path | None:
    """<run>/lerobot from the run's own trials (None when it has none that moved); `opened`:
    its bag, as run_trials takes it."""
    trials = run_trials(Path(run), opened)
    if not trials:
        return None
    write_datasets(Path(run) / 'lerobot', trials)
    return Path(run) / 'lerobot'


def export_runs(runs: list[Path], out: Path, say: Callable[[str], None] = print) -> dict:
    """`harness export RUNS --lerobot OUT`: every trial of every run folder. OUT is replaced
    only when it is a LeRobot dataset already (or empty), and never one that holds a RUN."""
    if Path(out).is_symlink():  # (replacing it would replace the link, or what it points to)
        raise ExportError(f'{out} is a symbolic link: name the folder itself as --lerobot')
    # The folder checked is the folder replaced: the path as the filesystem resolves it (a
    # link on the way, 'x/..'), not as its text reads.
    given, out = out, Path(os.path.realpath(out))
    if out == Path.cwd() or out in Path.cwd().parents or out == out.parent:
        raise ExportError(f'{given} is the working folder or above it: choose another --lerobot')
    if out.exists():
        if any(out == Path(r).resolve() or out in Path(r).resolve().parents for r in runs):
            raise ExportError(
                f'{given} holds a run folder being exported: choose another --lerobot'
            )
        if out.is_file() or (any(out.iterdir()) and not (out / 'meta' / 'info.json').is_file()):
            raise ExportError(
                f'{given} exists and is not a LeRobot dataset: it is not replaced (remove it, or '
                'choose another --lerobot)'
            )
        if (out / 'collection.json').is_file():  # (trained runs and gates read it by its path)
            raise ExportError(
                f'{given} is the dataset of a demonstration collection (harness demos): it is not '
                'replaced (choose another --lerobot)'
            )
    from harness_recording.bag import unclosed, unclosed_note

    trials: list[TrialData] = []
    for run in runs:
        if not Path(run).is_dir():
            raise ExportError(f'{run} is not a folder')
        bag = Path(run) / 'bag'
        if unclosed(bag):
            say(f'{run}: {unclosed_note(bag)}; its trials go in without video')
        found = run_trials(Path(run))
        if not found:
            say(
                f'{run}: no trial with recorded ticks (runs from before trials were recorded, '
                'or nothing moved)'
            )
        trials += found
    if not trials:
        raise ExportError('none of the run folders holds a trial with recorded ticks')
    missing = [t.meta['run'] for t in trials if not t.images and not t.stale]
    filmed = sum(1 for t in trials if t.images)  # (a camera at every frame: a video)
    if missing and filmed:  # (a dataset's cameras are the first episode's, at every frame)
        raise ExportError(
            f'{len(missing)} of the {len(trials)} trials have no camera frames (no bag, a lean '
            f'recording, or one that did not close: {", ".join(sorted(set(missing))[:3])}'
            f'{", ..." if len(set(missing)) > 3 else ""}), and {filmed} have videos: a dataset '
            'holds its cameras at every frame of every episode; export the two kinds apart'
        )
    if missing:
        say(
            f'{len(missing)} trials have no camera frames (no bag, or a lean recording, whose bag '
            'holds none): the dataset has no videos'
        )
    held = (out / 'meta' / 'info.json').is_file()
    summary = _write_beside(out, lambda folder: write_datasets(folder, trials, say))
    if held:
        say(f'{given} held a LeRobot dataset: it is replaced')
    for camera, why in summary['cameras_left_out'].items():
        say(f'{camera} is left out of the dataset: {why}')
    return summary


def _write_beside(out: Path, write: Callable[[Path], dict]) -> dict:
    """`write(folder)` into a new folder beside `out` (a resolved path), which then takes the
    place of `out`: an export that fails (a trial refused half-way, a full disk, a Ctrl-C)
    leaves `out` as it was and nothing beside it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    # (named, not mkdtemp's: the dataset keeps the modes a folder made here gets)
    partial = out.parent / f'.{out.name}.writing-{secrets.token_hex(6)}'
    partial.mkdir()
    swapped = False
    try:
        summary = write(partial)
        with interrupts_held():  # (a Ctrl-C now is raised once the swap and the removal are done)
            _swap(out, partial)
            swapped = True
    except KeyboardInterrupt:
        if swapped:
            raise InterruptedAfterWritingError(out) from None
        shutil.rmtree(partial, ignore_errors=True)
        raise
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return summary


class InterruptedAfterWritingError(KeyboardInterrupt):
    """A Ctrl-C that came as the new folder took the place of the old one: it did."""

    def __init__(self, out: Path) -> None:
        super().__init__(f'{out} was written')
        self.out = out


def _swap(out: Path, partial: Path) -> None:
    """`partial` takes the place of `out`, whose old folder (if any) is then removed; where it
    cannot, `out` is as it was and `partial` is removed."""
    old = None
    try:
        if out.exists():
            old = out.parent / f'.{out.name}.replaced-{secrets.token_hex(6)}'
            try:
                out.rename(old)
            except OSError as exc:  # (a mount point, a folder of another's)
                old = None
                raise ExportError(
                    f'{out} cannot be replaced: {exc.strerror or exc} (remove it, or choose '
                    'another --lerobot)'
                ) from None
        partial.rename(out)
    except BaseException:
        if old is not None and not out.exists():  # (the old one back where it was)
            old.rename(out)
            old = None
        shutil.rmtree(partial, ignore_errors=True)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_demos(
    runs: list[Path],
    out: Path,
    say: Callable[[str], None] = print,
    image_size: tuple[int, int] | None = None,
) -> dict:
    """One LeRobot dataset at `out` of the trials of `runs` that a tier-1 or tier-2 verifier
    satisfied (the demonstration collector's last step); a run folder that cannot be read is
    named and skipped. The summary adds the runs without a demonstration."""
    writer = DatasetWriter(Path(out), image_size=image_size)
    without: list[str] = []
    for k, run in enumerate(sorted(Path(r) for r in runs), 1):
        try:
            kept = [t for t in run_trials(run) if t.satisfied]
            for trial in kept:
                writer.add(trial)
        except ExportError as exc:
            say(f'[{k}/{len(runs)}] {run.name}: left out: {exc}')
            without.append(run.name)
            continue
        if not kept:
            without.append(run.name)
        say(f'[{k}/{len(runs)}] {run.name}: {len(kept)} demonstration(s)')
    summary = {k: v for k, v in writer.summary().items() if k != 'demos'}  # all are demos
    return summary | {'runs_without_demonstration': without}
