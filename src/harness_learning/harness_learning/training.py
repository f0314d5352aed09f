"""`harness policy train`: LeRobot's own training (its `lerobot_train` script, its ACT and
diffusion classes, its checkpoint layout) on a harness dataset, run in the learning extra's
environment. What this module adds is what LeRobot leaves to its user: a check of the dataset
that says what is wrong in one line, the view of the dataset that holds only the features the
policy is to see, sizes that train on a CPU, progress with time left, resuming a stopped run,
and the training record (`harness_training.json`) a catalogue entry is written from.

The observation holds only what a real station has: the joint state, the position of the
object the program located (the harness's pixel perception; `observation.environment_state`)
and, where asked (`cameras`), camera images. Never the simulator's ground truth: a harness
dataset has none.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

POLICY_TYPES = ('act', 'diffusion')
RECORD = 'harness_training.json'
LOSS_CURVE = 'loss.csv'
LEROBOT_DIR = 'lerobot'  # LeRobot's output_dir inside the run's folder
CHECKPOINT = f'{LEROBOT_DIR}/checkpoints/last/pretrained_model'
# LeRobot's record of the step its last checkpoint was saved at
CHECKPOINT_STEP = f'{LEROBOT_DIR}/checkpoints/last/training_state/training_step.json'
LOCK = '.training.lock'  # held by the one process that trains in a run's folder
# What a stopped run resumes with from its own saved configuration, whatever is asked again:
# asked differently, the record would describe a training that did not happen. (How often it
# saves and logs, which `harness policy train` derives from --steps, is taken from the saved
# run too, and not asked.)
RESUMED_AS_SAVED = ('policy', 'batch_size', 'seed', 'cameras', 'width')
STATE = 'observation.state'
ENVIRONMENT = 'observation.environment_state'
IMAGES = 'observation.images.'

# Sizes that train one task within the hour on 2 CPU cores (measured in the note). ACT without
# the VAE (the demonstrations of one program are unimodal) and without a backbone when no
# camera is asked for: ~3M parameters. A chunk of 25 actions is one second at 25 Hz.
POLICY_ARGS = {
    'act': [
        '--policy.type=act',
        '--policy.n_heads=8',
        '--policy.n_encoder_layers=2',
        '--policy.n_decoder_layers=1',
        '--policy.use_vae=false',
        '--policy.chunk_size=25',
        '--policy.n_action_steps=25',
        '--policy.pretrained_backbone_weights=null',
        # ACT's 1e-5 is for a pretrained backbone; from scratch, 1e-4 learns in the hour
        '--policy.optimizer_lr=1e-4',
    ],
    'diffusion': [
        '--policy.type=diffusion',
        '--policy.horizon=16',
        '--policy.n_action_steps=8',
        '--policy.down_dims=[128,256,512]',
        '--policy.num_inference_steps=10',
        '--policy.pretrained_backbone_weights=null',
        '--policy.crop_shape=null',
    ],
}


class TrainError(ValueError):
    """The dataset, the checkpoint folder or the options cannot train; the message says why."""


@dataclass(frozen=True)
class TrainPlan:
    dataset: Path
    out: Path
    policy: str = 'act'
    steps: int = 5000
    batch_size: int = 32
    seed: int = 0
    cameras: tuple[str, ...] = ()  # the cameras the policy sees (default: none)
    save_every: int = 1000
    log_every: int = 50
    threads: int = 1
    width: int = 256  # ACT's dim_model (its feed-forward is 4x): 256 ~2.7M parameters, 11 MB


@dataclass
class DatasetFacts:
    """What the dataset holds, as the policy will see it."""

    episodes: int
    frames: int
    fps: float
    tasks: dict[str, list[str]] = field(default_factory=dict)  # instruction -> located queries
    cameras: list[str] = field(default_factory=list)
    environment: bool = False
    # (task, seed) of its sampled layouts ([] when only fixed ones): recorded when the
    # training starts, so that the adoption gate's held-out check does not depend on what the
    # dataset's folder holds by then
    layouts: list[tuple[str, int]] | None = None  # None: the dataset does not say


def check_dataset(root: Path, cameras: tuple[str, ...] = ()) -> DatasetFacts:
    """The dataset's facts, or TrainError saying in one line why it cannot train a policy."""
    root = Path(root)
    info_path = root / 'meta' / 'info.json'
    if not info_path.is_file():
        raise TrainError(f'{root} is not a LeRobot dataset (no meta/info.json)')
    try:
        info = json.loads(info_path.read_text())
    except (ValueError, RecursionError) as exc:  # (nested past the parser)
        raise TrainError(f'{info_path} is not JSON: {exc}') from None
    version = info.get('codebase_version') if isinstance(info, dict) else None
    if version != 'v3.0':
        raise TrainError(f'{root} is a LeRobot dataset of version {version!r}, not v3.0')
    features = info.get('features') or {}
    if not info.get('total_episodes') or not info.get('total_frames'):
        raise TrainError(f'{root} holds no episodes: nothing to learn from')
    for key in (STATE, 'action'):
        if (features.get(key) or {}).get('shape') != [14]:
            raise TrainError(f'{root}: {key} must be 14 values (the command layout)')
    have = sorted(k[len(IMAGES) :] for k in features if k.startswith(IMAGES))
    missing = [c for c in cameras if c not in have]
    if missing:
        raise TrainError(
            f'{root} has no camera {", ".join(missing)}; cameras: {", ".join(have) or "none"}'
        )
    for needed in ('meta/stats.json', 'meta/episodes'):
        if not (root / needed).exists():
            raise TrainError(f'{root} has no {needed}: not a whole LeRobot dataset')
    try:
        stats = json.loads((root / 'meta/stats.json').read_text())
    except (OSError, ValueError, RecursionError) as exc:
        raise TrainError(f'{root / "meta/stats.json"} cannot be read as JSON: {exc}') from None
    _check_stats(root, stats)
    _check_frames(root, float(info.get('fps') or 0), int(info['total_frames']))
    if not any((root / 'meta/episodes').rglob('*.parquet')):
        raise TrainError(f'{root}/meta/episodes holds no parquet file: its episodes are unknown')
    for camera in cameras:
        videos = root / 'videos' / (IMAGES + camera)
        if not videos.is_dir() or not any(videos.rglob('*.mp4')):
            raise TrainError(f'{root} has no videos of {camera} (in {videos})')
        _check_videos(sorted(videos.rglob('*.mp4')))
    environment = ENVIRONMENT in features
    if not environment and not cameras:
        raise TrainError(
            f'{root} has neither {ENVIRONMENT} nor a camera the policy could see the object with '
            '(--cameras): a policy of joint states alone cannot find the object'
        )
    return DatasetFacts(
        episodes=int(info['total_episodes']),
        frames=int(info['total_frames']),
        fps=float(info.get('fps') or 0),
        tasks=_located_queries(root),
        cameras=list(cameras),
        environment=environment,
        layouts=_layouts(root),
    )


def _check_stats(root: Path, stats: object) -> None:
    """TrainError unless the normalisation stats of the state and the action are finite
    numbers and each std is >= 0 (a NaN there trains every weight to NaN)."""
    import numpy as np

    where = root / 'meta/stats.json'
    normalised = [STATE, 'action'] + ([ENVIRONMENT] if ENVIRONMENT in (stats or {}) else [])
    for key in normalised:
        entry = stats.get(key) if isinstance(stats, dict) else None
        if not isinstance(entry, dict):
            raise TrainError(f'{where} has no stats of {key}')
        for name in ('mean', 'std', 'min', 'max'):
            try:
                values = np.asarray(entry[name], dtype=float)
            except (KeyError, TypeError, ValueError):
                raise TrainError(f'{where}: {key}.{name} is not a list of numbers') from None
            if not np.isfinite(values).all() or (name == 'std' and (values < 0).any()):
                raise TrainError(
                    f'{where}: {key}.{name} holds {values.tolist()}: it must be finite'
                    + (' and >= 0' if name == 'std' else '')
                )


TIMESTAMP_TOLERANCE_S = 1e-4  # LeRobot's own (LeRobotDataset's tolerance_s)


def _check_frames(root: Path, fps: float, total: int) -> None:
    """TrainError unless data/ holds readable parquet files of `total` frames whose
    timestamps step 1/fps within each episode (a dataset whose fps is not its frames' rate
    would be served at that wrong rate; LeRobot reads it without a word)."""
    import numpy as np
    import pyarrow.parquet as pq

    parts = sorted((root / 'data').glob('*/*.parquet'))
    if not parts:
        raise TrainError(f'{root}/data holds no parquet file: the dataset has no frames')
    if not fps > 0:
        raise TrainError(f'{root / "meta/info.json"}: fps must be > 0, not {fps}')
    frames = 0
    for part in parts:
        try:
            table = pq.read_table(part, columns=['episode_index', 'timestamp'])
        except (OSError, ValueError, KeyError) as exc:  # (ArrowInvalid is a ValueError)
            raise TrainError(f'{part} cannot be read: {" ".join(str(exc).split())[:200]}') from None
        episodes = np.asarray(table.column('episode_index').to_numpy(), dtype=int)
        times = np.asarray(table.column('timestamp').to_numpy(), dtype=float)
        frames += len(times)
        for episode in np.unique(episodes):
            steps = np.diff(times[episodes == episode])
            if len(steps) and not np.allclose(steps, 1.0 / fps, rtol=0, atol=TIMESTAMP_TOLERANCE_S):
                raise TrainError(
                    f"{part}: episode {episode}'s timestamps step {float(np.median(steps)):g} s, "
                    f'not 1/fps = {1.0 / fps:g} s (meta/info.json says fps {fps:g})'
                )
    if frames != total:
        raise TrainError(f'{root}/data holds {frames} frames; meta/info.json says {total}')


def _check_videos(paths: list[Path]) -> None:
    """TrainError naming the first video that cannot be opened as one (a truncated file:
    LeRobot fails on it midway, its words only in the log)."""
    import av

    for path in paths:
        try:
            with av.open(str(path)) as container:
                if not container.streams.video:
                    raise TrainError(f'{path} holds no video stream')
        except av.error.FFmpegError as exc:
            raise TrainError(f'{path} cannot be read as a video: {exc}') from None


def _layouts(root: Path) -> list[tuple[str, int]] | None:
    from harness_recording.trial_data import sampled_layouts

    try:
        return sorted(sampled_layouts(root))
    except (OSError, ValueError, KeyError):  # (no harness columns: not a harness dataset)
        return None


def _located_queries(root: Path) -> dict[str, list[str]]:
    """Each task's instruction -> the queries its programs located the objects with, in order
    (what the served policy asks the harness's perception for)."""
    import pyarrow.parquet as pq

    out: dict[str, list[str]] = {}
    for part in sorted((root / 'meta' / 'episodes').glob('*/*.parquet')):
        try:
            table = pq.read_table(part)
        except (OSError, ValueError) as exc:  # (pyarrow's ArrowInvalid is a ValueError)
            raise TrainError(f'{part} cannot be read: {" ".join(str(exc).split())[:200]}') from None
        names = table.column_names
        if 'tasks' not in names:
            continue
        queries = (
            table.column('harness/located_queries').to_pylist()
            if 'harness/located_queries' in names
            else [[]] * table.num_rows
        )
        for tasks, query in zip(table.column('tasks').to_pylist(), queries, strict=True):
            for task in tasks or []:
                if query and task not in out:
                    out[task] = list(query)
    return out


def training_view(dataset: Path, cameras: tuple[str, ...], view: Path) -> Path:
    """`view`: the dataset as the policy sees it: meta/ with only the chosen cameras' features
    and stats, data/ and those cameras' videos linked (LeRobot makes a policy's inputs of every
    feature the dataset declares)."""
    dataset = Path(dataset).resolve()
    if view.exists():
        shutil.rmtree(view)
    (view / 'meta').mkdir(parents=True)
    dropped = {
        k
        for k in json.loads((dataset / 'meta/info.json').read_text())['features']
        if k.startswith(IMAGES) and k[len(IMAGES) :] not in cameras
    }
    info = json.loads((dataset / 'meta/info.json').read_text())
    info['features'] = {k: v for k, v in info['features'].items() if k not in dropped}
    if not any(k.startswith(IMAGES) for k in info['features']):
        info['video_path'] = None
    (view / 'meta/info.json').write_text(json.dumps(info, indent=2))
    stats = json.loads((dataset / 'meta/stats.json').read_text())
    (view / 'meta/stats.json').write_text(
        json.dumps({k: v for k, v in stats.items() if k not in dropped}, indent=2)
    )
    for entry in (dataset / 'meta').iterdir():
        if entry.name not in ('info.json', 'stats.json'):
            (view / 'meta' / entry.name).symlink_to(entry)
    (view / 'data').symlink_to(dataset / 'data')
    for camera in cameras:
        key = IMAGES + camera
        (view / 'videos').mkdir(exist_ok=True)
        (view / 'videos' / key).symlink_to(dataset / 'videos' / key)
    return view


def lerobot_arguments(plan: TrainPlan, view: Path) -> list[str]:
    """The arguments of LeRobot's training script for `plan` (a fresh run, or the resumption
    of the one in plan.out)."""
    last = plan.out / CHECKPOINT / 'train_config.json'
    if last.is_file():  # a stopped run: LeRobot resumes from its last checkpoint
        return ['--resume=true', f'--config_path={last}', f'--steps={plan.steps}']
    if (plan.out / LEROBOT_DIR).exists():
        raise TrainError(
            f'{plan.out / LEROBOT_DIR} exists without a checkpoint to resume from: remove it, '
            'or choose another --out'
        )
    return [
        f'--dataset.repo_id=local/{Path(plan.dataset).resolve().name}',
        f'--dataset.root={view}',
        '--dataset.video_backend=pyav',
        *POLICY_ARGS[plan.policy],
        *(
            [f'--policy.dim_model={plan.width}', f'--policy.dim_feedforward={4 * plan.width}']
            if plan.policy == 'act'
            else []
        ),
        '--policy.device=cpu',
        '--policy.push_to_hub=false',
        f'--output_dir={plan.out / LEROBOT_DIR}',
        f'--job_name=harness_{plan.policy}',
        f'--steps={plan.steps}',
        f'--batch_size={plan.batch_size}',
        f'--seed={plan.seed}',
        f'--save_freq={plan.save_every}',
        f'--log_freq={plan.log_every}',
        '--eval_freq=0',
        '--num_workers=0',
        '--wandb.enable=false',
    ]


_LOSS = re.compile(r'\bloss:([-+]?(?:nan|inf|[0-9.]+(?:[eE][-+]?[0-9]+)?))')


@dataclass
class Progress:
    """Steps, loss and time left, from LeRobot's log lines (a line every log_every steps)."""

    plan: TrainPlan
    first_step: int = 0
    step: int = 0
    started: float = field(default_factory=time.monotonic)
    losses: list[tuple[int, float]] = field(default_factory=list)

    @property
    def diverged(self) -> bool:
        """Whether the last loss logged is no number (NaN, inf): the weights are lost."""
        return bool(self.losses) and not math.isfinite(self.losses[-1][1])

    def back_to_checkpoint(self) -> None:
        """Back to the step of the run's last checkpoint: what was trained past it is lost
        (the run resumes from it), so the record says where it was."""
        self.step = checkpoint_step(self.plan.out)
        self.losses = [p for p in self.losses if p[0] <= self.step]

    def line(self, text: str) -> str | None:
        """A progress sentence for one of LeRobot's log lines with a loss, else None."""
        found = _LOSS.search(text)
        if not found or 'step:' not in text:
            return None
        self.step += self.plan.log_every
        loss = float(found.group(1))
        self.losses.append((self.step, loss))
        done = self.step - self.first_step
        per_step = (time.monotonic() - self.started) / max(done, 1)
        left = per_step * max(self.plan.steps - self.step, 0)
        return (
            f'step {self.step}/{self.plan.steps}  loss {loss:.4f}  '
            f'{per_step * 1000:.0f} ms/step  {left / 60:.1f} min left'
        )


ACT_HEADS = 8  # POLICY_ARGS' --policy.n_heads: ACT's width splits over them
MOST_WIDTH = 4096  # past it, one layer's weights alone pass a laptop's memory


def plan_problem(plan: TrainPlan) -> str:
    """What makes `plan` untrainable before LeRobot starts ('' when nothing): a width ACT
    cannot split over its heads, more threads than cores, an --out that is not a training
    folder (another folder's files, the dataset itself or a folder in it)."""
    if plan.policy == 'act' and (plan.width % ACT_HEADS or not 0 < plan.width <= MOST_WIDTH):
        return (
            f"--width must be a multiple of {ACT_HEADS} (ACT's heads) from {ACT_HEADS} to "
            f'{MOST_WIDTH}, not {plan.width}'
        )
    cores = os.cpu_count() or 1
    if not 0 < plan.threads <= cores:
        return f'--threads must be 1 to {cores} (the cores here), not {plan.threads}'
    out, dataset = Path(plan.out).resolve(), Path(plan.dataset).resolve()
    if out == dataset or dataset in out.parents:
        return f'--out {plan.out} is in the dataset {plan.dataset}: a training folder of its own'
    ours = (RECORD, LOCK, LEROBOT_DIR, 'train.log', 'dataset_view', LOSS_CURVE)
    if out.is_dir() and any(out.iterdir()) and not any((out / n).exists() for n in ours):
        return (
            f'--out {plan.out} holds other files: a training folder is new, empty, or one this '
            'command made (which it resumes)'
        )
    return ''


def train(plan: TrainPlan, python: str, say: Callable[[str], None] = print) -> dict:
    """Run LeRobot's training for `plan` with the learning environment's `python`; the training
    record (also written to plan.out/harness_training.json). TrainError when it cannot."""
    if plan.policy not in POLICY_TYPES:
        raise TrainError(f'--policy must be one of {", ".join(POLICY_TYPES)}, not {plan.policy!r}')
    if problem := plan_problem(plan):
        raise TrainError(problem)
    facts = check_dataset(plan.dataset, plan.cameras)
    try:
        plan.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file there (or above), no permission, a name too long
        why = 'it is a file' if plan.out.is_file() else exc.strerror
        raise TrainError(f'--out {plan.out} cannot be made a folder: {why}') from None
    with _holding(plan.out / LOCK) as lock_fd, _stopped_by_sigterm():
        return _train(plan, facts, python, say, lock_fd)


def _train(
    plan: TrainPlan, facts: DatasetFacts, python: str, say: Callable[[str], None], lock_fd: int
) -> dict:
    resumed = (plan.out / CHECKPOINT / 'train_config.json').is_file()
    if not resumed:  # (a record of an attempt that saved nothing describes no training)
        (plan.out / RECORD).unlink(missing_ok=True)
    view = plan.out / 'dataset_view'
    if not resumed:
        training_view(plan.dataset, plan.cameras, view)
    args = lerobot_arguments(plan, view)
    progress = Progress(plan)
    if resumed:
        record = _read_record(plan.out)
        if why := _not_as_saved(record, plan):
            raise TrainError(
                f'{plan.out} holds a stopped run trained otherwise ({why}): resume it with the '
                'same options (only --steps may change), or choose another --out'
            )
        saved = record.get('plan') or {}
        plan = replace(
            plan,
            save_every=int(saved.get('save_every', plan.save_every)),
            log_every=int(saved.get('log_every', plan.log_every)),
        )
        progress.plan = plan
        progress.losses = [tuple(p) for p in record.get('loss_curve', [])]
        progress.back_to_checkpoint()
        progress.first_step = progress.step
        say(f'resuming {plan.out} from its checkpoint at step {progress.step}')
    env = {
        **os.environ,
        'PYTHONUNBUFFERED': '1',
        'OMP_NUM_THREADS': str(plan.threads),
        'MKL_NUM_THREADS': str(plan.threads),
        'HF_HUB_OFFLINE': '1',  # nothing is fetched: the dataset is local, weights from scratch
        'WANDB_MODE': 'disabled',
        'TQDM_DISABLE': '1',
    }
    say(
        f'training {plan.policy} on {facts.episodes} demonstrations ({facts.frames} frames) of '
        f'{len(facts.tasks) or "?"} task(s); sees: joint state'
        + (', the located object' if facts.environment else '')
        + (f', cameras {", ".join(plan.cameras)}' if plan.cameras else '')
    )
    started = time.monotonic()
    log_path = plan.out / 'train.log'
    with open(log_path, 'a') as log:
        process = subprocess.Popen(
            [python, '-m', 'lerobot.scripts.lerobot_train', *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            pass_fds=(lock_fd,),
        )
        try:
            for text in process.stdout:
                log.write(text)
                sentence = progress.line(text)
                if sentence:
                    say(sentence)
                    _write_record(plan, facts, progress, started, 'training')
                if progress.diverged:
                    break  # its weights are lost: every later step stays so
        except BaseException:  # Ctrl-C, SIGTERM (_stopped_by_sigterm), a broken pipe, a full disk
            _end(process)
            progress.back_to_checkpoint()
            _write_record(plan, facts, progress, started, 'stopped')
            raise
        if progress.diverged:
            _end(process)
            step, loss = progress.losses[-1]
            progress.back_to_checkpoint()
            _write_record(plan, facts, progress, started, 'failed')
            raise TrainError(
                f"the loss became {loss} at step {step}: the weights are lost (the dataset's "
                'meta/stats.json, a std of 0 say, or a learning rate too high); its last '
                f'checkpoint may hold them too: train into another --out (log: {log_path})'
            )
        code = process.wait()
    if code != 0:
        progress.back_to_checkpoint()
        _write_record(plan, facts, progress, started, 'failed')
        tail = log_path.read_text().strip().splitlines()[-1:] or ['']
        raise TrainError(f'LeRobot training exited with {code}: {tail[0][:300]} (log: {log_path})')
    if not (plan.out / CHECKPOINT / 'model.safetensors').is_file():
        raise TrainError(f'LeRobot training ended without a checkpoint in {plan.out / CHECKPOINT}')
    progress.step = plan.steps
    return _write_record(plan, facts, progress, started, 'done')


def _end(process: subprocess.Popen) -> None:
    """End LeRobot's process: SIGTERM, then SIGKILL when it has not ended within 30 s."""
    process.terminate()
    with contextlib.suppress(BaseException):  # (a second Ctrl-C while it ends)
        process.wait(timeout=30)
    if process.poll() is None:
        process.kill()


def checkpoint_step(out: Path) -> int:
    """The step of the last checkpoint LeRobot saved in a run's folder (its training_step.json,
    else the name of the folder `last` links to; 0: none yet)."""
    try:
        return int(json.loads((Path(out) / CHECKPOINT_STEP).read_text())['step'])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        return int(os.readlink(Path(out) / LEROBOT_DIR / 'checkpoints' / 'last'))
    except (OSError, ValueError):
        return 0


def _not_as_saved(record: dict, plan: TrainPlan) -> str:
    """How `plan` differs from the saved run's (dataset and RESUMED_AS_SAVED), or ''."""
    saved = record.get('plan') or {}
    dataset = str(Path(plan.dataset).resolve())
    if record.get('dataset') not in (None, dataset):
        return f'--dataset {record.get("dataset")}, not {dataset}'
    asked = asdict(plan)
    for key in RESUMED_AS_SAVED:
        was, now = saved.get(key), asked[key]
        now = list(now) if isinstance(now, tuple) else now
        if key in saved and was != now:
            return f'{key} {was!r}, not {now!r}'
    return ''


@contextlib.contextmanager
def _holding(lock: Path):
    """The run's folder held by this process alone (two trainings into one folder both ran,
    resumed each other's checkpoints and wrote one record); yields the lock's descriptor, which
    LeRobot's process inherits (pass_fds), so that it holds the folder for as long as it
    trains, also past a harness killed under it."""
    try:
        held = open(lock, 'a')  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise TrainError(f'{lock.parent} cannot be trained in: {exc.strerror}') from None
    with held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TrainError(
                f'{lock.parent} is being trained by another process: wait for it, or choose '
                'another --out'
            ) from None
        except OSError as exc:  # a filesystem without locks
            raise TrainError(f'{lock} cannot be locked: {exc.strerror}') from None
        yield held.fileno()


@contextlib.contextmanager
def _stopped_by_sigterm():
    """SIGTERM (a `timeout`, a scheduler) stops the training as Ctrl-C does: its record says
    stopped, not training. (Only from the main thread, where signal handlers are set.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(_signum, _frame):
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:  # (None: a handler set from C, which Python cannot put back)
        signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)


def weights_sha256(run: Path) -> str:
    """The SHA-256 of a training folder's weights ('' when it has none): what its server's
    metadata says, so a broker can tell the server answering is this one."""
    import hashlib

    try:
        relative = _read_record(run).get('checkpoint', CHECKPOINT)
        digest = hashlib.sha256()
        with open(Path(run) / relative / 'model.safetensors', 'rb') as weights:
            for block in iter(lambda: weights.read(1 << 20), b''):
                digest.update(block)
    except (OSError, TypeError):
        return ''
    return digest.hexdigest()


def _read_record(out: Path) -> dict:
    try:
        return json.loads((out / RECORD).read_text())
    except (OSError, ValueError):
        return {}


def _write_record(
    plan: TrainPlan, facts: DatasetFacts, progress: Progress, started: float, status: str
) -> dict:
    earlier = _read_record(plan.out)
    record = {
        'status': status,
        'policy': plan.policy,
        'dataset': str(Path(plan.dataset).resolve()),
        'demonstrations': facts.episodes,
        'frames': facts.frames,
        'fps': facts.fps,
        'tasks': facts.tasks,
        'observation': {
            'state': True,
            'environment_state': facts.environment,
            'cameras': list(plan.cameras),
        },
        'plan': {k: str(v) if isinstance(v, Path) else v for k, v in asdict(plan).items()},
        'steps_done': progress.step,
        'seconds': round(float(earlier.get('seconds_before', 0)) + time.monotonic() - started, 1),
        'loss_curve': [list(p) for p in progress.losses],
        'final_loss': progress.losses[-1][1] if progress.losses else None,
        'checkpoint': CHECKPOINT,
        # the layouts its demonstrations came from, as they were when it began (None: unknown)
        'layouts': earlier['layouts']
        if 'layouts' in earlier
        else None
        if facts.layouts is None
        else [list(layout) for layout in facts.layouts],
    }
    if status != 'training':
        record['seconds_before'] = record['seconds']
    tmp = plan.out / (RECORD + '.tmp')
    tmp.write_text(json.dumps(record, indent=2) + '\n')
    tmp.replace(plan.out / RECORD)
    with open(plan.out / LOSS_CURVE, 'w') as curve:
        curve.write('step,loss\n' + ''.join(f'{s},{v}\n' for s, v in progress.losses))
    return record
