"""The scripted baseline of the actions rung (R0), derived from the reference program: the
motions a programs-rung episode of the same task, layout and seed executed, replayed open-loop
as one `<action>` per reply. Each execution becomes one action per arm it moved: the joints
and/or the gripper opening its command ended at. What R0 loses is what the program had:
perception between motions, straight-line and planned paths, both arms at once, and reactions
to events. Pure: reads the run folder (events.jsonl and ticks/), writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from harness_types.robot_state import ARMS, arm_slice, gripper_index

from harness_driver.trials import TICKS

MOVED_RAD = 2e-3  # a joint command that changed more moved the arm (a gripper's hold shifts less)
HOME_COMMAND = np.array([0.0] * 6 + [1.0] + [0.0] * 6 + [1.0])  # joints 0, grippers open


class SourceRunError(ValueError):
    """The run folder cannot be replayed: it is missing, not a programs-rung episode, or of
    another task, layout or seed."""


def source_episode(folder: Path) -> dict:
    """The `episode` record of a run folder (task, layout, seed, interface)."""
    events = Path(folder) / 'events.jsonl'
    if not events.is_file():
        raise SourceRunError(f'{folder} is not a run folder: it has no events.jsonl')
    for line in events.read_text().splitlines():
        record = json.loads(line)
        if record.get('type') == 'episode':
            return record
    raise SourceRunError(f'{events} has no episode record')


def check_source(folder: Path, task: str, layout: int, seed: int) -> None:
    """SourceRunError unless `folder` is a programs-rung episode of this task, layout and
    seed (a replay elsewhere would move through another scene)."""
    episode = source_episode(folder)
    interface = episode.get('interface', 'programs')
    if interface != 'programs':
        raise SourceRunError(f'{folder} is a {interface}-rung episode, not a programs-rung one')
    got = (episode.get('task'), episode.get('layout'), episode.get('seed'))
    if got != (task, layout, seed):
        raise SourceRunError(
            f'{folder} ran task {got[0]} layout {got[1]} seed {got[2]}, not {task} layout '
            f'{layout} seed {seed}'
        )


def recorded_actions(folder: Path) -> list[str]:
    """The `<action>` bodies (JSON) replaying the cells' executions of a programs-rung run."""
    folder = Path(folder)
    source_episode(folder)
    actions: list[str] = []
    last = HOME_COMMAND.copy()
    for line in (folder / 'events.jsonl').read_text().splitlines():
        record = json.loads(line)
        if record.get('type') != 'cell':
            continue
        ticks = folder / TICKS / f'cell-{record["call"]:03d}.npz'
        counts = [int(e.get('ticks', 0)) for e in record.get('executions', [])]
        if not sum(counts):
            continue
        if not ticks.is_file():
            raise SourceRunError(f'{ticks} is missing: the cell of call {record["call"]} moved')
        with np.load(ticks) as data:
            commands = np.asarray(data['command'], dtype=float)
        if len(commands) != sum(counts):
            raise SourceRunError(
                f'{ticks} holds {len(commands)} ticks, its executions {sum(counts)}'
            )
        start = 0
        for count in counts:
            if not count:
                continue
            segment = commands[start : start + count]
            start += count
            actions += _actions_of(last, segment[-1])
            last = segment[-1]
    return actions


def _actions_of(before: np.ndarray, after: np.ndarray) -> list[str]:
    """One action per arm whose joints or gripper the execution moved, in ARMS order."""
    out = []
    for arm in ARMS:
        action: dict = {'arm': arm}
        joints = after[arm_slice(arm)]
        if np.abs(joints - before[arm_slice(arm)]).max() > MOVED_RAD:
            action['joints'] = [round(float(q), 4) for q in joints]
        i = gripper_index(arm)
        if after[i] != before[i]:
            action['gripper'] = round(float(after[i]), 3)
        if len(action) > 1:
            out.append(json.dumps(action))
    return out
