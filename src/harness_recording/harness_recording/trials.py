"""Trials on disk: every tick an action moved the robot (the executions' traces: sim time, the
14 measured joints and grippers, the 14 commanded), saved beside the run's events as
`ticks/<trial>.npz`, so a trial can become a dataset episode (harness_recording.lerobot) long
after the run. Pure."""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
from harness_types.execution import Execution

from harness_recording.run_folder import file_inside

TICKS = 'ticks'
WIDTH = 14  # joints and grippers of a tick's measured and commanded rows (the command layout)


def ticks_of(executions: Iterable[Execution]) -> dict[str, np.ndarray]:
    """The executions' ticks in order: time (s), measured (N x 14), command (N x 14)."""
    rows = [t for e in executions for t in e.trace]
    return {
        'time': np.array([t.time for t in rows], dtype=np.float64),
        'measured': np.array([t.measured for t in rows], dtype=np.float32).reshape(-1, WIDTH),
        'command': np.array([t.command for t in rows], dtype=np.float32).reshape(-1, WIDTH),
    }


def save_ticks(
    run, name: str, ticks: dict[str, np.ndarray], log: Callable[[str], None] = print
) -> str:
    """Write `ticks` to <run>/ticks/<name>.npz; returns the path relative to the run folder
    ('' when nothing moved, or when it cannot be written: `log` says why, and the run goes on
    without this part of its dataset)."""
    if not len(ticks['time']):
        return ''
    folder = Path(run.path) / TICKS
    try:
        folder.mkdir(exist_ok=True)
        np.savez(folder / f'{name}.npz', **ticks)
    except OSError as exc:
        log(f'the ticks of {name} could not be saved: {exc}')
        return ''
    return f'{TICKS}/{name}.npz'


def _npz_ticks(path: Path, rel: str) -> dict[str, np.ndarray]:
    """The time, measured and command arrays of the ticks file at `path` (`rel` in the run
    folder); ValueError naming it when it is not a whole .npz archive of them (a file cut
    short by a full disk or a kill, bytes overwritten, another kind of file)."""
    keys = ('time', 'measured', 'command')
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise ValueError('not an .npz archive')
        with data:
            missing = [k for k in keys if k not in data.files]
            if missing:
                raise ValueError(f'{rel} has no {", ".join(missing)}')
            return {k: data[k] for k in keys}  # (read now: a bad CRC raises here)
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise ValueError(f'{rel} is not a readable .npz archive of ticks: {exc}') from None
    except ValueError as exc:
        if str(exc).startswith(rel):
            raise
        # (numpy's own words for a text file advise loading it with pickle)
        raise ValueError(f'{rel} is not an .npz archive of ticks') from None


def load_ticks(run_folder: Path, relative: list[str] | str) -> dict[str, np.ndarray]:
    """The ticks of one or more saved files, concatenated (time, measured, command)."""
    parts = [relative] if isinstance(relative, str) else relative
    if not isinstance(parts, list):
        raise ValueError(f'the ticks are named by a file or a list of files, not {parts!r:.80}')
    loaded = []
    for rel in parts:
        if not rel:
            continue
        path = file_inside(run_folder, rel)
        if path is None:
            raise ValueError(f'{rel!r:.200} is not a file inside the run folder {run_folder}')
        part = _npz_ticks(path, rel)
        rows = len(part['time'])
        if part['time'].ndim != 1 or any(
            part[k].ndim != 2 or len(part[k]) != rows for k in ('measured', 'command')
        ):
            raise ValueError(f'{rel}: not one time, measured and command row per tick')
        if any(part[k].shape[1] != WIDTH for k in ('measured', 'command')):
            widths = f'{part["measured"].shape[1]} and {part["command"].shape[1]}'
            raise ValueError(f'{rel}: rows of {widths} values, not {WIDTH} (joints and grippers)')
        for k in ('time', 'measured', 'command'):
            if part[k].dtype.kind not in 'iuf' or not np.all(np.isfinite(part[k])):
                raise ValueError(f'{rel}: its {k} holds values that are not finite numbers')
        loaded.append(part)
    if not loaded:
        return {
            'time': np.zeros(0),
            'measured': np.zeros((0, WIDTH), np.float32),
            'command': np.zeros((0, WIDTH), np.float32),
        }
    return {k: np.concatenate([d[k] for d in loaded]) for k in ('time', 'measured', 'command')}
