"""The scripted baseline of the actions rung (R0), derived from the reference program: the
motions a programs-rung episode of the same task, layout and seed executed, replayed open-loop
as one `<action>` per reply. Each execution becomes one action per arm it moved: the joints
and/or the gripper opening its command ended at. What R0 loses is what the program had:
perception between motions, straight-line and planned paths, both arms at once, and reactions
to events. Pure: reads the run folder (events.jsonl, summary.json and ticks/), writes
nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from harness_bench.layout import layout_name
from harness_bench.randomization import axes_name
from harness_recording.trials import TICKS
from harness_types.robot_state import ARMS, arm_slice, gripper_index

MOVED_RAD = 2e-3  # a joint command that changed more moved the arm (a gripper's hold shifts less)
HOME_COMMAND = np.array([0.0] * 6 + [1.0] + [0.0] * 6 + [1.0])  # joints 0, grippers open
# A source episode that ended so was cut short by something other than its program: what it
# moved is not the reference program's motion (one that failed its task still is).
UNREPLAYABLE = ('error', 'interrupted', 'model_service_failed')


class SourceRunError(ValueError):
    """The run folder cannot be replayed: it is missing, torn, not a programs-rung episode, of
    another task, layout or seed, or ended by an error or an interrupt."""


def episode_record(folder: Path) -> dict:
    """The `episode` record of a run folder (task, layout, seed, interface)."""
    events = Path(folder) / 'events.jsonl'
    return _episode_in(_events(events), events)


def _episode_in(records: list[dict], events: Path) -> dict:
    for record in records:
        if record.get('type') == 'episode':
            return record
    raise SourceRunError(f'{events} has no episode record')


def check_source(
    folder: Path, task: str, layout: int, seed: int, randomize: tuple[str, ...] = ()
) -> None:
    """SourceRunError unless `folder` is a programs-rung episode of this task, layout, seed and
    scene randomisation (a replay elsewhere would move through another scene) that ran to its
    end."""
    episode = episode_record(folder)
    interface = episode.get('interface', 'programs')
    if interface != 'programs':
        raise SourceRunError(f'{folder} is an episode of the {interface} rung, not of programs')
    got = (episode.get('task'), episode.get('layout'), episode.get('seed'))
    if got != (task, layout, seed):
        ran = f'layout {layout_name(got[1])}' if isinstance(got[1], int) else f'layout {got[1]}'
        raise SourceRunError(
            f'{folder} ran task {got[0]} {ran} seed {got[2]}, not {task} layout '
            f'{layout_name(layout)} seed {seed}'
        )
    varied = episode.get('randomize', 'none')  # a run folder written before has none
    if varied != axes_name(randomize):
        raise SourceRunError(
            f'{folder} ran in a scene randomised on {varied}, not on {axes_name(randomize)}'
        )
    status = source_status(folder)
    if status in UNREPLAYABLE:
        raise SourceRunError(f'{folder} ended with status {status}: its motions are not whole')


def source_status(folder: Path) -> str:
    """The status its summary.json gives the episode of run folder `folder`."""
    path = Path(folder) / 'summary.json'
    try:
        summary = json.loads(path.read_text())
        return str(summary['status'])
    except FileNotFoundError:
        raise SourceRunError(f'{folder} has no summary.json: its episode did not end') from None
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise SourceRunError(f'{path} cannot be read ({exc})') from None


def recorded_actions(folder: Path) -> list[str]:
    """The `<action>` bodies (JSON) replaying the cells' executions of a programs-rung run."""
    folder = Path(folder)
    events = folder / 'events.jsonl'
    records = _events(events)
    _episode_in(records, events)
    actions: list[str] = []
    sent = HOME_COMMAND.copy()  # what the replay has commanded so far, per arm
    for record in records:
        if record.get('type') != 'cell':
            continue
        try:
            call = int(record['call'])
            counts = [int(e.get('ticks', 0)) for e in record.get('executions', [])]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SourceRunError(f'{events}: a cell record is malformed ({exc!r})') from None
        if not sum(counts):
            continue
        ticks = folder / TICKS / f'cell-{call:03d}.npz'
        commands = _commands(ticks, call)
        if len(commands) != sum(counts):
            raise SourceRunError(
                f'{ticks} holds {len(commands)} ticks, its executions {sum(counts)}'
            )
        end = 0
        for count in counts:
            if count:
                end += count
                actions += _actions_of(sent, commands[end - 1])
    return actions


def _events(path: Path) -> list[dict]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise SourceRunError(f'{path.parent} is not a run folder: it has no {path.name}') from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceRunError(f'{path} cannot be read ({exc})') from None
    records = []
    for n, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise SourceRunError(f'{path} line {n} is not JSON ({exc})') from None
        if isinstance(record, dict):
            records.append(record)
    return records


def _commands(ticks: Path, call: int) -> np.ndarray:
    """The joint commands of a cell's ticks (one row per tick)."""
    if not ticks.is_file():
        raise SourceRunError(f'{ticks} is missing: the cell of call {call} moved')
    try:
        with np.load(ticks) as data:
            commands = np.asarray(data['command'], dtype=float)
    except Exception as exc:  # numpy's loaders fail in many ways (zip, zlib, pickle, format)
        raise SourceRunError(f'{ticks} cannot be read ({type(exc).__name__}: {exc})') from None
    if commands.ndim != 2 or commands.shape[1] != len(HOME_COMMAND):
        raise SourceRunError(f'{ticks}: commands of shape {commands.shape}, not (ticks, 14)')
    return commands


def _actions_of(sent: np.ndarray, after: np.ndarray) -> list[str]:
    """One action per arm whose joints or gripper the execution moved away from what the
    replay last sent it, in ARMS order; `sent` takes what they send (so that small motions
    that add up are not lost)."""
    out = []
    for arm in ARMS:
        action: dict = {'arm': arm}
        joints = arm_slice(arm)
        if np.abs(after[joints] - sent[joints]).max() > MOVED_RAD:
            action['joints'] = [round(float(q), 4) for q in after[joints]]
            sent[joints] = after[joints]
        i = gripper_index(arm)
        if after[i] != sent[i]:
            action['gripper'] = round(float(after[i]), 3)
            sent[i] = after[i]
        if len(action) > 1:
            out.append(json.dumps(action))
    return out
