"""The outcome model, in shadow mode: learned from recorded trials, it reads out each trial's
outcome (the probability its task succeeded) from the trial's joint trajectory, and a per-tick
surprise (how far each tick's measured motion is from what a dynamics model learned from the
same trials expects of its command). Its scores sit beside the verifier's verdict in the run
folder (the `trial` event's `outcome_model`) and in the dataset; it never aborts, vetoes or
changes anything.

Both parts are fitted here, from data, in numpy: an L2-regularised logistic regression on a
trial's features (start and end states, the change between them, how far the arms lagged their
commands, the grippers' travel, the duration, the task), and a least-squares linear model of
one tick's measured change from its command's lead. A model is one JSON file.
Pure: trials come in as arrays.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

GRIPPERS = (6, 13)  # the grippers' places in the command layout
ARMS = (slice(0, 6), slice(7, 13))
L2 = 1.0  # the logistic regression's ridge (on standardised features)
STEPS = 400  # Newton steps at most
THRESHOLD = 0.5  # p_success at or above: it predicts success


class OutcomeModelError(ValueError):
    """A model file or its trials cannot be used; the message says why."""


@dataclass(frozen=True)
class TrialSample:
    """One recorded trial: its task, ticks (time, measured, command) and start state, and
    whether the task succeeded (the ground truth; None when scoring)."""

    task: str
    time: np.ndarray  # (N,)
    measured: np.ndarray  # (N, 14)
    command: np.ndarray  # (N, 14)
    start: np.ndarray | None = None  # (14,) measured before the first tick
    success: bool | None = None
    layout: tuple[str, int] | None = None  # (task, seed) of a sampled layout
    run: str = ''


def _base_features(s: TrialSample) -> np.ndarray:
    first = s.start if s.start is not None else s.measured[0]
    last = s.measured[-1]
    lag = np.abs(s.command - s.measured)
    grips = s.measured[:, GRIPPERS]
    return np.concatenate(
        [
            first,
            last,
            last - first,
            [lag[:, a].mean() for a in ARMS],
            [lag[:, a].max() for a in ARMS],
            lag[:, GRIPPERS].mean(axis=0),
            grips.min(axis=0),
            grips.max(axis=0) - grips.min(axis=0),
            [float(s.time[-1] - s.time[0]) if len(s.time) > 1 else 0.0, math.log1p(len(s.time))],
        ]
    ).astype(np.float64)


def _regressors(s: TrialSample) -> tuple[np.ndarray, np.ndarray]:
    """The dynamics model's rows: a tick's command lead over the last measured state (and 1)
    -> the measured change of that tick."""
    before = np.vstack(
        [s.start[None, :] if s.start is not None else s.measured[:1], s.measured[:-1]]
    )
    lead = s.command - before
    return np.hstack([lead, np.ones((len(lead), 1))]), s.measured - before


@dataclass
class OutcomeModel:
    tasks: list[str]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    dynamics: np.ndarray  # (15, 14)
    residual_scale: float  # the median per-tick residual norm of the training trials
    trained: dict = field(default_factory=dict)  # what it learned from
    held_out: dict = field(default_factory=dict)  # its report card on held-out trials

    def _x(self, s: TrialSample) -> np.ndarray:
        onehot = np.array([float(s.task == t) for t in self.tasks])
        return np.concatenate([(_base_features(s) - self.mean) / self.scale, onehot])

    def p_success(self, s: TrialSample) -> float:
        z = float(self._x(s) @ self.weights + self.bias)
        return float(1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z)))))

    def surprise(self, s: TrialSample) -> np.ndarray:
        """Per tick: the measured change's distance from the dynamics model's expectation, in
        units of the training trials' median (1 = ordinary; contact, a grasp or a collision
        stand out)."""
        x, y = _regressors(s)
        residual = np.linalg.norm(y - x @ self.dynamics, axis=1)
        return residual / self.residual_scale

    def score(self, s: TrialSample, surprise: np.ndarray | None = None) -> dict:
        """What sits beside the verdict: p_success, the prediction, and the surprise's
        summary (the per-tick values, `surprise` when the caller has them, go in a file of
        their own)."""
        if len(s.time) == 0:
            return {'model': 'outcome_model', 'p_success': None, 'note': 'no tick to score'}
        p = self.p_success(s)
        surprise = self.surprise(s) if surprise is None else surprise
        k = int(np.argmax(surprise))
        return {
            'model': 'outcome_model (shadow: never acts)',
            'p_success': round(p, 4),
            'predicted': 'success' if p >= THRESHOLD else 'failure',
            'surprise_max': round(float(surprise[k]), 3),
            'surprise_at_s': round(float(s.time[k]), 3),
            'surprise_mean': round(float(surprise.mean()), 3),
            'known_task': s.task in self.tasks,
        }

    def to_json(self) -> dict:
        return {
            'kind': 'harness outcome model',
            'tasks': self.tasks,
            'mean': self.mean.tolist(),
            'scale': self.scale.tolist(),
            'weights': self.weights.tolist(),
            'bias': self.bias,
            'dynamics': self.dynamics.tolist(),
            'residual_scale': self.residual_scale,
            'trained': self.trained,
            'held_out': self.held_out,
        }


def load_model(path: Path | str) -> OutcomeModel:
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise OutcomeModelError(f'outcome model {path} does not exist') from None
    except (ValueError, IsADirectoryError) as exc:
        raise OutcomeModelError(f'outcome model {path} is not JSON: {exc}') from None
    if not isinstance(doc, dict) or doc.get('kind') != 'harness outcome model':
        raise OutcomeModelError(f'{path} is not an outcome model (`harness outcome-model train`)')
    try:
        model = OutcomeModel(
            list(doc['tasks']),
            np.array(doc['mean'], float),
            np.array(doc['scale'], float),
            np.array(doc['weights'], float),
            float(doc['bias']),
            np.array(doc['dynamics'], float),
            float(doc['residual_scale']),
            dict(doc.get('trained') or {}),
            dict(doc.get('held_out') or {}),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise OutcomeModelError(f'{path}: a field is missing or malformed: {exc}') from None
    features = len(model.mean)
    if model.weights.shape != (features + len(model.tasks),) or model.dynamics.shape != (15, 14):
        raise OutcomeModelError(f'{path}: its arrays do not fit together')
    return model


def held_out(layout: tuple[str, int] | None, run: str, share: float) -> bool:
    """Whether a trial is held out of training: by its layout (the same layout, whatever ran
    on it, is on one side), else by its run; a fixed share, the same on every machine."""
    key = f'{layout[0]}:{layout[1]}' if layout is not None else run
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < share


def fit(samples: list[TrialSample], l2: float = L2) -> OutcomeModel:
    """Both parts from `samples` (each with its ground truth)."""
    labelled = [s for s in samples if s.success is not None and len(s.time) > 1]
    if len(labelled) < 10:
        raise OutcomeModelError(f'{len(labelled)} labelled trials: at least 10 are needed')
    if len({s.success for s in labelled}) < 2:
        raise OutcomeModelError('every trial had the same outcome: nothing tells them apart')
    tasks = sorted({s.task for s in labelled})
    base = np.stack([_base_features(s) for s in labelled])
    mean, scale = base.mean(axis=0), base.std(axis=0)
    scale[scale < 1e-6] = 1.0
    onehot = np.array([[float(s.task == t) for t in tasks] for s in labelled])
    x = np.hstack([(base - mean) / scale, onehot, np.ones((len(labelled), 1))])
    y = np.array([float(s.success) for s in labelled])
    w = np.zeros(x.shape[1])
    ridge = np.full(x.shape[1], l2)
    ridge[-1] = 0.0  # the bias is not shrunk
    for _ in range(STEPS):  # Newton's method on the penalised log-likelihood
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -60, 60)))
        grad = x.T @ (p - y) + ridge * w
        hess = (x.T * (p * (1 - p))) @ x + np.diag(ridge)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    rows = [_regressors(s) for s in labelled]
    xs = np.vstack([r[0] for r in rows])
    ys = np.vstack([r[1] for r in rows])
    dynamics, *_ = np.linalg.lstsq(xs, ys, rcond=None)
    residual = np.linalg.norm(ys - xs @ dynamics, axis=1)
    trained = {
        'trials': len(labelled),
        'successes': int(y.sum()),
        'ticks': len(xs),
        'layouts': sorted({f'{s.layout[0]}:{s.layout[1]}' for s in labelled if s.layout}),
    }
    return OutcomeModel(
        tasks,
        mean,
        scale,
        w[:-1],
        float(w[-1]),
        dynamics,
        float(max(np.median(residual), 1e-9)),
        trained,
    )


def report_card(model: OutcomeModel, samples: Iterable[TrialSample]) -> dict:
    """Its predictions against the ground truth: per task and overall, true and false
    positives and negatives (positive: it predicts success)."""
    rows: dict[str, dict[str, int]] = {}
    for s in samples:
        if s.success is None or len(s.time) < 2:
            continue
        _tally(rows, s.task, model.p_success(s) >= THRESHOLD, s.success)
    return rows


def _tally(rows: dict[str, dict[str, int]], task: str, said: bool, truth: bool) -> None:
    """One prediction (`said`: success) against the ground truth, counted for its task and
    for 'all'."""
    key = ('true' if said == truth else 'false') + ('_pos' if said else '_neg')
    for name in (task, 'all'):
        row = rows.setdefault(
            name, dict.fromkeys(('true_pos', 'true_neg', 'false_pos', 'false_neg'), 0)
        )
        row[key] += 1


def report_markdown(card: dict, title: str) -> str:
    lines = [
        f'## {title}',
        '',
        "The outcome model's prediction (success when p_success >= 0.5) against the ground "
        'truth; positive: it predicts success. It runs in shadow mode: it never acts.',
        '',
        '| task | trials | TP | TN | FP | FN | FP rate | FN rate |',
        '|---|---|---|---|---|---|---|---|',
    ]
    for task in [*sorted(k for k in card if k != 'all'), 'all']:
        if task not in card:
            continue
        r = card[task]
        negatives, positives = r['true_neg'] + r['false_pos'], r['true_pos'] + r['false_neg']
        fp = f'{r["false_pos"] / negatives:.2f}' if negatives else '-'
        fn = f'{r["false_neg"] / positives:.2f}' if positives else '-'
        lines.append(
            f'| {task} | {negatives + positives} | {r["true_pos"]} | {r["true_neg"]} | '
            f'{r["false_pos"]} | {r["false_neg"]} | {fp} | {fn} |'
        )
    return '\n'.join(lines) + '\n'


SCORES = 'outcome_model'  # <run>/outcome_model/<trial_id>.npz: each trial's per-tick surprise


def samples_of(run: Path) -> list[TrialSample]:
    """The trials of one run folder with their ticks; the episode's own trial carries the
    ground truth (the summary's outcome), an operator's step none."""
    from harness_recording.run_folder import read_events

    run = Path(run)
    events = read_events(run)
    episode = next((e for e in events if e.get('type') == 'episode'), {})
    summary_path = run / 'summary.json'
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    outcome = summary.get('outcome') or None
    layout = None
    if episode.get('layout') == -1 and episode.get('task'):
        layout = (str(episode['task']), int(episode.get('seed') or 0))
    out = []
    for t in (e for e in events if e.get('type') == 'trial'):
        success = bool(outcome['success']) if outcome and t.get('trial_id') == 'episode' else None
        sample = _sample(run, t, str(t.get('task') or episode.get('task') or ''))
        out.append(replace(sample, success=success, layout=layout, run=run.name))
    return out


def _sample(run: Path, event: dict, task: str) -> TrialSample:
    """A `trial` event of a run folder with its ticks, unlabelled."""
    from harness_recording.trial_data import start_state_of
    from harness_recording.trials import load_ticks

    ticks = load_ticks(Path(run), event.get('ticks') or [])
    raw = event.get('start_state')  # checked as the dataset checks it, kept in full precision
    return TrialSample(
        task,
        ticks['time'],
        ticks['measured'].astype(np.float64),
        ticks['command'].astype(np.float64),
        None if start_state_of(raw) is None else np.asarray(raw, dtype=np.float64),
    )


def score_trial(model: OutcomeModel, run: Path, event: dict, layout: str = '') -> dict:
    """The `outcome_model` field of a trial event (`layout`: 'task:seed' of a sampled layout);
    its per-tick surprise goes to <run>/outcome_model/<trial_id>.npz."""
    sample = _sample(run, event, str(event.get('task') or ''))
    surprise = model.surprise(sample) if len(sample.time) else None
    score = model.score(sample, surprise)
    # a layout it trained on is no test of it: the bench's report card leaves it out
    score['trained_on_layout'] = bool(layout) and layout in model.trained.get('layouts', [])
    if len(sample.time):
        folder = Path(run) / SCORES
        folder.mkdir(exist_ok=True)
        name = re.sub(r'[^A-Za-z0-9_.-]', '_', str(event.get('trial_id') or 'trial'))
        np.savez(folder / f'{name}.npz', time=sample.time, surprise=surprise)
        score['surprise_file'] = f'{SCORES}/{name}.npz'
    return score


def shadow_card(summaries: Iterable[dict]) -> dict | None:
    """The outcome model's report card over a bench's episodes (their summaries, with
    `run_folder`): each episode trial's shadow prediction (its `outcome_model` score) against
    the episode's ground truth, only on layouts the model did not train on; None when no
    episode was scored."""
    from harness_recording.run_folder import read_events

    rows: dict[str, dict[str, int]] = {}
    trained_on = 0
    scored = False
    for summary in summaries:
        truth = (summary.get('outcome') or {}).get('success')
        run = summary.get('run_folder')
        if truth is None or not run or not (Path(run) / 'events.jsonl').is_file():
            continue
        trial = next(
            (
                e
                for e in read_events(Path(run))
                if e.get('type') == 'trial' and e.get('trial_id') == 'episode'
            ),
            {},
        )
        score = trial.get('outcome_model') or {}
        if not isinstance(score.get('p_success'), int | float):
            continue
        scored = True
        if score.get('trained_on_layout'):
            trained_on += 1
            continue
        _tally(rows, str(summary.get('task')), score['p_success'] >= THRESHOLD, bool(truth))
    if not scored:
        return None
    return {'card': rows, 'left_out_trained_layouts': trained_on}
