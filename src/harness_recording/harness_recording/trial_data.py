"""Trials read back from run folders, as the datasets and the learning take them: a trial's
ticks, the camera frames the bag holds within its span, and the objects its program located
(`observation.environment_state`: the harness's own perception, never the simulator's truth).
Also read here: the sampled layouts a dataset's trials ran on, and a trial's start state."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from arx_x5_description.embodiment import load_embodiment

from harness_recording.run_folder import read_events
from harness_recording.trials import WIDTH, load_ticks

if TYPE_CHECKING:
    from harness_recording.bag import OpenedBag

HARNESS_VERSION = '0.1.0'  # the executor's version a trial records
MAX_LOCATED = 3  # objects in observation.environment_state
# observation.environment_state: x, y, z of each located object, then the seconds since the
# trial's first observation (the start pose and the end pose can be the same: a task that
# ends with the arms home; the clock tells going from having gone)
ENVIRONMENT_WIDTH = 3 * MAX_LOCATED + 1
ENVIRONMENT_NAMES = [f'located_{k}_{a}' for k in range(1, MAX_LOCATED + 1) for a in 'xyz'] + [
    'elapsed_s'
]


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
    # (10,) `observation.environment_state` (environment_state): the located objects' x, y, z,
    # then the seconds since the first observation; None when the trial located none
    environment: np.ndarray | None = None
    # Cameras the bag holds less often than the ticks: how many frames have no image of their
    # own. A dataset leaves them out, so their frames are not decoded (not in `images`).
    stale: dict[str, int] = field(default_factory=dict)

    @property
    def satisfied(self) -> bool:
        return self.meta.get('verdict') == 'satisfied' and self.meta.get('tier') in (1, 2)


def camera_frames(
    run: Path, opened: OpenedBag | None = None
) -> dict[str, list[tuple[float, bytes]]]:
    """Each camera's JPEG frames in the run's bag: (episode time s, JPEG bytes), in order (a
    trial decodes only the frames it shows). `opened`: the bag, opened once for whoever reads
    it (harness_recording.bag.OpenedBag)."""
    from harness_recording.bag import CountedMessages, bag_reader, typestore

    bag = run / 'bag'
    if not (bag / 'metadata.yaml').is_file():  # (none, or one that did not close: unclosed_note)
        return {}

    store = typestore()
    out: dict[str, list] = {}
    try:
        with contextlib.ExitStack() as stack:
            reader = bag_reader(bag, opened, stack)
            wanted = [c for c in reader.connections if c.topic.endswith('/image_raw/compressed')]
            messages = CountedMessages(reader, wanted)
            for c, _, raw in messages:
                msg = store.deserialize_cdr(raw, c.msgtype)
                cam = c.topic.strip('/').split('/')[-3]
                t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
                out.setdefault(cam, []).append((t, bytes(msg.data)))
            damaged = messages.shortfall()
    except Exception as exc:  # rosbags raises several kinds for a damaged bag
        raise ExportError(f'the bag of {run} cannot be read: {exc}') from None
    if damaged:  # (its cameras would be left out for a reason that is not theirs)
        raise ExportError(f'the camera frames of {run}: {damaged}')
    for frames in out.values():
        frames.sort(key=lambda f: f[0])
    return out


def dataset_fps() -> int:
    """A dataset's frames a second: the control rate (a frame per tick)."""
    return int(round(load_embodiment().rates.control_hz))


def stale_frames(frames: list[tuple[float, object]], times: np.ndarray, fps: float) -> int:
    """How many of `times` have no camera frame of their own (none stamped within half a
    period at or before it): 0 when the camera was recorded at every tick. Reads the frames'
    stamps alone (decoded or not)."""
    if not frames:
        return len(times)
    stamps = np.asarray([ft for ft, _ in frames])
    shown = np.searchsorted(stamps, np.asarray(times) + 1e-6, side='right') - 1
    age = np.asarray(times) - stamps[np.maximum(shown, 0)]
    return int(np.count_nonzero((shown < 0) | (age > 0.5 / fps)))


def decoded(frames: dict[str, list[tuple[float, bytes]]]) -> dict[str, list]:
    """JPEG frames (time, bytes) per camera as (time, H x W x 3) arrays."""
    return {cam: [(t, _decoded(cam, t, data)) for t, data in fs] for cam, fs in frames.items()}


def _decoded(camera: str, at: float, data: bytes) -> np.ndarray:
    """One JPEG frame as an H x W x 3 array; ValueError naming it when it does not decode
    (bytes overwritten in the bag, or an image past Pillow's bound on pixels)."""
    from PIL import Image

    try:
        return np.asarray(Image.open(io.BytesIO(data)).convert('RGB'))
    except Exception as exc:  # (Pillow raises several kinds: OSError, its bomb error, ...)
        why = ' '.join(str(exc).split())[:200] or type(exc).__name__
        raise ValueError(f'the {camera} frame at {at:.3f} s does not decode: {why}') from None


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
    task = event.get('dataset_task') or event.get('instruction') or episode.get('task', '')
    if not isinstance(task, str):
        raise TypeError(f'its dataset task is {task!r:.80}, not a text')
    return TrialData(
        task=task,
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
            layout, seed = row['harness/layout'], row['harness/seed']
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (layout, seed)):
                raise ValueError(
                    f'{part}: an episode of {row["harness/task_name"]!r:.80} has layout '
                    f'{layout!r:.40} and seed {seed!r:.40}, not two integers'
                )
            if layout < 0 and (not verified or row['harness/verdict'] == 'satisfied'):
                found.add((str(row['harness/task_name']), seed))
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
    if not isinstance(value, list) or len(value) != WIDTH:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    state = np.asarray(value, dtype=np.float32)
    return state if np.isfinite(state).all() else None


def run_trials(run: Path, opened: OpenedBag | None = None) -> list[TrialData]:
    """The trials of one run folder (ExportError when it is not one); `opened`: its bag, as
    camera_frames takes it."""
    run = Path(run)
    if not (run / 'events.jsonl').is_file():
        raise ExportError(f'{run} is not a run folder (no events.jsonl)')
    events = read_events(run)
    episode = next((e for e in events if e.get('type') == 'episode'), {})
    trials = [e for e in events if e.get('type') == 'trial']
    if not trials:
        return []
    frames = camera_frames(run, opened)
    fps = dataset_fps()
    located = located_objects(run)
    environment = environment_state([p for _, p in located]) if located else None
    out = []
    for t in trials:
        try:
            ticks = load_ticks(run, t.get('ticks') or [])
            if len(ticks['time']) < 2:
                continue  # nothing moved (one tick has no action after its observation)
            start, end = observed_span(t, ticks)
            trial = trial_of(t, ticks, {}, episode, run.name, environment)
            within = {cam: frames_within(fs, start, end) for cam, fs in frames.items()}
            shown = {cam: fs for cam, fs in within.items() if fs}  # (a camera with none: not one)
            stale = {cam: stale_frames(fs, trial.time, fps) for cam, fs in shown.items()}
            trial.stale = {cam: n for cam, n in stale.items() if n}
            trial.images = decoded({cam: fs for cam, fs in shown.items() if not stale[cam]})
        except (ValueError, OSError, KeyError, TypeError, IndexError) as exc:
            # a run folder edited or broken by hand
            named = t.get('key') or t.get('trial_id') or t.get('ticks') or '?'
            raise ExportError(f'trial {named!r:.100} in {run}: {exc}') from None
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
