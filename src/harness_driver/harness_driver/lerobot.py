"""Trials as training data: a LeRobot v3.0 dataset written from run folders, with pyarrow and
PyAV only (no lerobot, no torch).

Each trial of a run (a `trial` line of events.jsonl: the episode of `harness run`, an action of
`harness mcp`) is one dataset episode, its frames at the control rate, in LeRobot's convention:
frame t holds what was observed at tick t and the action commanded after it. From the trial's
ticks (harness_driver.trials: each the command of a tick and the state measured after it),
frame t is `observation.state` = the 14 joints and grippers measured after tick t, `action` =
the 14 commanded at tick t + 1 (the command layout); a trial of N ticks gives N - 1 frames.
`observation.environment_state`, where every trial has one, is the positions (x, y, z, m) of
the objects the trial's program located (the harness's pixel perception, `locate`: the first
result of each distinct query, in the order first asked, up to three, zeros after; never the
simulator's ground truth). Each camera is an H.264 video of the JPEG
frames the bag holds, one per frame: a camera is in the dataset only when the bag has its image
at every tick (`worker.compressed_every_ticks: 1`, as `harness demos` records), so that the
distinct images come at the fps info.json states; otherwise info.json's
`harness/cameras_left_out` says why it is not. `image_size` scales every camera to the
policy's resolution. `meta/episodes` carries, beside
LeRobot's columns, the run's task, layout, seed, dispatcher, executor and its version, and the
verifier's verdict, tier and evidence. `demos/` is a second dataset of the trials a tier-1 or
tier-2 verifier judged satisfied.

Layout (LeRobot's v3.0 paths): meta/info.json, meta/stats.json, meta/tasks.parquet,
meta/episodes/chunk-000/file-000.parquet, data/chunk-CCC/file-FFF.parquet (one file per
episode), videos/observation.images.CAM/chunk-CCC/file-FFF.mp4 (one file per episode).
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from arx_x5_description.embodiment import load_embodiment

from harness_driver.run_folder import read_events
from harness_driver.trials import load_ticks

CODEBASE_VERSION = 'v3.0'
MAX_LOCATED = 3  # objects in observation.environment_state
# observation.environment_state: x, y, z of each located object, then the seconds since the
# trial's first observation (the start pose and the end pose can be the same: a task that
# ends with the arms home; the clock tells going from having gone)
ENVIRONMENT_WIDTH = 3 * MAX_LOCATED + 1
ENVIRONMENT_NAMES = [f'located_{k}_{a}' for k in range(1, MAX_LOCATED + 1) for a in 'xyz'] + [
    'elapsed_s'
]
MAX_STATS_FRAMES = 200  # camera frames (their sampled pixels) the image stats keep
CHUNK_SIZE = 1000
ROBOT_TYPE = 'arx_x5_dual'
HARNESS_VERSION = '0.1.0'


class ExportError(ValueError):
    """A run folder cannot be exported; the message says which and why."""


@dataclass
class TrialData:
    """One trial's frames and what the dataset says of it."""

    task: str
    state: np.ndarray  # N x 14 float32: observed at frame t
    action: np.ndarray  # N x 14 float32: commanded after observing frame t
    time: np.ndarray  # N, s of episode time of each observation
    images: dict[str, list[tuple[float, np.ndarray]]] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    environment: np.ndarray | None = None  # (9,) the located objects' positions, if any

    @property
    def satisfied(self) -> bool:
        return self.meta.get('verdict') == 'satisfied' and self.meta.get('tier') in (1, 2)


def camera_frames(run: Path) -> dict[str, list[tuple[float, bytes]]]:
    """Each camera's JPEG frames in the run's bag: (episode time s, JPEG bytes), in order (a
    trial decodes only the frames it shows)."""
    bag = run / 'bag'
    if not (bag / 'metadata.yaml').is_file():
        return {}
    from rosbags.rosbag2 import Reader

    from harness_driver.bag import typestore

    store = typestore()
    out: dict[str, list] = {}
    try:
        with Reader(bag) as reader:
            wanted = [c for c in reader.connections if c.topic.endswith('/image_raw/compressed')]
            for c, _, raw in reader.messages(connections=wanted):
                msg = store.deserialize_cdr(raw, c.msgtype)
                cam = c.topic.strip('/').split('/')[-3]
                t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
                out.setdefault(cam, []).append((t, bytes(msg.data)))
    except Exception as exc:  # rosbags raises several kinds for a damaged bag
        raise ExportError(f'the bag of {run} cannot be read: {exc}') from None
    for frames in out.values():
        frames.sort(key=lambda f: f[0])
    return out


def decoded(frames: dict[str, list[tuple[float, bytes]]]) -> dict[str, list]:
    """JPEG frames (time, bytes) per camera as (time, H x W x 3) arrays."""
    from PIL import Image

    return {
        cam: [(t, np.asarray(Image.open(io.BytesIO(data)).convert('RGB'))) for t, data in fs]
        for cam, fs in frames.items()
    }


def trial_of(
    event: dict,
    ticks: dict[str, np.ndarray],
    images: dict,
    episode: dict,
    run: str,
    environment: np.ndarray | None = None,
) -> TrialData:
    """A `trial` line of events.jsonl (`event`), its `ticks`, the camera frames it shows and
    the run's `episode` line (task, layout, seed) as one dataset episode: the one place a
    trial's dataset columns are made, for the live MCP session and for an export alike.
    A tick's state is measured after its command, so frame t pairs what was observed before
    tick t + 1 with its command: frame 0 the trial's start state (the event's `start_state`,
    measured before its first tick) and the first command, frame t the state after tick t and
    the command of tick t + 1. A trial recorded without its start state begins at its first
    tick's state (one frame fewer)."""
    start = start_state_of(event.get('start_state'))
    measured, command, times = ticks['measured'], ticks['command'], ticks['time']
    if start is not None and len(times):  # each command with the state before it
        state = np.vstack([start[None, :], measured[:-1]])
        action = command
        time = np.concatenate([[observed_span(event, ticks)[0]], times[:-1]])
    else:  # from the first tick's state on
        state, action, time = measured[:-1], command[1:], times[:-1]
    return TrialData(
        task=event.get('dataset_task') or event.get('instruction') or episode.get('task', ''),
        state=state.astype(np.float32),
        action=action.astype(np.float32),
        time=time,
        images=images,
        environment=environment,
        meta={
            'run': run,
            'task_name': episode.get('task', event.get('task', '')),
            'layout': episode.get('layout'),
            'seed': episode.get('seed'),
            'trial_id': event.get('trial_id', ''),
            'key': event.get('key', ''),
            'dispatcher': event.get('dispatcher', ''),
            'executor': event.get('executor', ''),
            'executor_version': HARNESS_VERSION,
            'executor_status': event.get('executor_status', ''),
            'verdict': event.get('verdict', ''),
            'tier': int(event.get('tier') or 0),
            'verifier_evidence': list(event.get('verifier_evidence') or []),
            'action': json.dumps(event['action'], sort_keys=True) if event.get('action') else '',
            # the outcome model's shadow scores beside the verdict (NaN: not scored)
            'outcome_p_success': _score(event, 'p_success'),
            'outcome_surprise_max': _score(event, 'surprise_max'),
        },
    )


def _score(event: dict, name: str) -> float:
    value = (event.get('outcome_model') or {}).get(name)
    return float(value) if isinstance(value, int | float) else float('nan')


def sampled_layouts(root: Path, verified: bool = False) -> set[tuple[str, int]]:
    """The (task, seed) sampled layouts a dataset's episodes came from (`verified`: only those
    whose trial a verifier satisfied), from the harness's columns of meta/episodes."""
    import pyarrow.parquet as pq

    columns = ['harness/task_name', 'harness/layout', 'harness/seed', 'harness/verdict']
    found = set()
    for part in sorted((Path(root) / 'meta' / 'episodes').rglob('*.parquet')):
        for row in pq.read_table(part, columns=columns).to_pylist():
            if int(row['harness/layout']) < 0 and (
                not verified or row['harness/verdict'] == 'satisfied'
            ):
                found.add((str(row['harness/task_name']), int(row['harness/seed'])))
    return found


def observed_span(event: dict, ticks: dict[str, np.ndarray]) -> tuple[float, float]:
    """The episode times of a trial's first and last observation: from before its first
    tick (one period earlier) where it has its start state, else from its first tick."""
    times = ticks['time']
    if not len(times):
        return 0.0, 0.0
    first = float(times[0])
    if start_state_of(event.get('start_state')) is not None:
        first -= float(times[1] - times[0]) if len(times) > 1 else 0.0
    return first, float(times[-1])


def start_state_of(value: object) -> np.ndarray | None:
    """A trial's `start_state`: 14 finite numbers, else None."""
    if not isinstance(value, list) or len(value) != 14:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    state = np.asarray(value, dtype=np.float32)
    return state if np.isfinite(state).all() else None


def run_trials(run: Path) -> list[TrialData]:
    """The trials of one run folder (ExportError when it is not one)."""
    run = Path(run)
    if not (run / 'events.jsonl').is_file():
        raise ExportError(f'{run} is not a run folder (no events.jsonl)')
    events = read_events(run)
    episode = next((e for e in events if e.get('type') == 'episode'), {})
    trials = [e for e in events if e.get('type') == 'trial']
    if not trials:
        return []
    frames = camera_frames(run)
    located = located_objects(run)
    environment = environment_state([p for _, p in located]) if located else None
    out = []
    for t in trials:
        try:
            ticks = load_ticks(run, t.get('ticks') or [])
        except (ValueError, OSError) as exc:  # a run folder edited or broken by hand
            raise ExportError(f'the ticks of trial {t.get("key", "?")!r} in {run}: {exc}') from None
        if len(ticks['time']) < 2:
            continue  # nothing moved (one tick has no action after its observation)
        start, end = observed_span(t, ticks)
        images = decoded({cam: frames_within(fs, start, end) for cam, fs in frames.items()})
        trial = trial_of(t, ticks, images, episode, run.name, environment)
        trial.meta['located_queries'] = [q for q, _ in located]
        out.append(trial)
    return out


def located_objects(run: Path) -> list[tuple[str, np.ndarray]]:
    """What the run's programs located, from kernel.log: for each distinct `locate` query, in
    the order first asked, the query and the position of its first result (the first asked is
    before any motion it leads to); at most MAX_LOCATED."""
    log = Path(run) / 'kernel.log'
    if not log.is_file():
        return []
    out: list[tuple[str, np.ndarray]] = []
    for line in log.read_text(errors='replace').splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get('call') != 'locate':
            continue
        query = (record.get('args') or {}).get('query', '')
        found = record.get('result')
        if not isinstance(query, str) or any(q == query for q, _ in out):
            continue
        if not (isinstance(found, list) and found and isinstance(found[0], dict)):
            continue
        position = found[0].get('position')
        if not (isinstance(position, list) and len(position) == 3):
            continue
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in position):
            continue
        values = np.asarray(position, dtype=np.float32)
        if np.isfinite(values).all():
            out.append((query, values))
        if len(out) == MAX_LOCATED:
            break
    return out


def environment_state(positions: list[np.ndarray], elapsed: float = 0.0) -> np.ndarray:
    """`observation.environment_state`: x, y, z of each located position in order, zeros after
    the last (MAX_LOCATED objects, so tasks of one dataset share its width), then `elapsed`,
    the seconds since the trial's first observation."""
    out = np.zeros(ENVIRONMENT_WIDTH, np.float32)
    out[-1] = elapsed
    for k, position in enumerate(positions[:MAX_LOCATED]):
        out[3 * k : 3 * k + 3] = position
    return out


def frames_within(frames: list, start: float, end: float) -> list:
    """The frames shown from `start` to `end`: the last one before `start` and those within."""
    before = [f for f in frames if f[0] <= start + 1e-6]
    within = [f for f in frames if start + 1e-6 < f[0] <= end + 1e-6]
    return (before[-1:] or frames[:1]) + within


def _frames_at(frames: list[tuple[float, np.ndarray]], times: np.ndarray) -> list[np.ndarray]:
    """For each of `times`, the latest camera frame at or before it (the first one before
    any); `frames` in time order."""
    shown = np.searchsorted([ft for ft, _ in frames], np.asarray(times) + 1e-6, side='right')
    return [frames[max(int(n) - 1, 0)][1] for n in shown]


def stale_frames(frames: list[tuple[float, np.ndarray]], times: np.ndarray, fps: float) -> int:
    """How many of `times` have no camera frame of their own (none stamped within half a
    period at or before it): 0 when the camera was recorded at every tick."""
    if not frames:
        return len(times)
    stamps = np.asarray([ft for ft, _ in frames])
    shown = np.searchsorted(stamps, np.asarray(times) + 1e-6, side='right') - 1
    age = np.asarray(times) - stamps[np.maximum(shown, 0)]
    return int(np.count_nonzero((shown < 0) | (age > 0.5 / fps)))


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
    """One frame per entry of `images` (H.264, yuv420p), each cropped to `size` (h, w). The
    cameras' frames change once every `compressed_every_ticks` ticks and are repeated between:
    each distinct frame (the same array, repeated) is converted to YUV once, which was ~60% of
    the encoding."""
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
        self.fps = int(round(emb.rates.control_hz))
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
        if self.cameras is None:
            self.cameras = sorted(c for c in images if not stale[c])
            self.left_out = {
                c: f'{stale[c]} of {len(trial.time)} frames have no image of their own: the bag '
                'holds a frame every few ticks (worker.compressed_every_ticks: 1 records every '
                'tick)'
                for c in sorted(images)
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


def write_run_dataset(run: Path) -> Path | None:
    """<run>/lerobot from the run's own trials (None when it has none that moved)."""
    trials = run_trials(Path(run))
    if not trials:
        return None
    write_datasets(Path(run) / 'lerobot', trials)
    return Path(run) / 'lerobot'


def export_runs(runs: list[Path], out: Path, say: Callable[[str], None] = print) -> dict:
    """`harness export RUNS --lerobot OUT`: every trial of every run folder. OUT is replaced
    only when it is a LeRobot dataset already (or empty), and never one that holds a RUN."""
    out = Path(out)
    if out.exists():
        resolved = out.resolve()
        if any(
            resolved == Path(r).resolve() or resolved in Path(r).resolve().parents for r in runs
        ):
            raise ExportError(f'{out} holds a run folder being exported: choose another --lerobot')
        if out.is_file() or (any(out.iterdir()) and not (out / 'meta' / 'info.json').is_file()):
            raise ExportError(
                f'{out} exists and is not a LeRobot dataset: it is not replaced (remove it, or '
                'choose another --lerobot)'
            )
    trials: list[TrialData] = []
    for run in runs:
        if not Path(run).is_dir():
            raise ExportError(f'{run} is not a folder')
        found = run_trials(Path(run))
        if not found:
            say(
                f'{run}: no trial with recorded ticks (runs from before trials were recorded, '
                'or nothing moved)'
            )
        trials += found
    if not trials:
        raise ExportError('none of the run folders holds a trial with recorded ticks')
    missing = [t.meta['run'] for t in trials if not t.images]
    if missing:
        say(f'{len(missing)} trials have no camera frames (no bag): the dataset has no videos')
    return write_datasets(Path(out), trials, say)


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
