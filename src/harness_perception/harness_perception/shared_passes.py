"""Detection passes shared between the processes of one station.

The verifier's eyes (the station's process) and the kernel's `locate()` (the kernel node's
process) each run their own perception, and they often look at the same moment: the goal judged
at an episode's start sees what the program's first `locate()` sees, and the kernel's scene
report after the last cell sees what the goal judged at the end sees (a pixels pass costs
50-80 ms of CPU each time). A pass is a function of its input (the views' bytes, the robot's
joints, the query where the backend reads it), of the backend's configuration and of the state
the backend keeps between passes where it reads it (pixels keeps its table plane, and keeps it
as it was when too little of the table is seen to fit one). So a pass is written here under the
digest of its input and configuration, with the state it started from, whether it read that
state, and the state it left; another process's perception with the same digest takes it
instead of repeating it, when it did not read its state or started from the same one, and then
adopts the state it left. Tracks and ids stay each perception's own.

Who may write here: the folder is the station's (harness_bringup.passes_folder), made for the
station's user alone (0700), which keeps other users out; the kernel's program process, the
only untrusted code on a station, may run as the same user, and Landlock keeps it out (reads
only beneath the Python installation and the API's packages, writes only beneath its
workspace; programs do not run without it). Anything unreadable here counts as no entry: the
pass is then run.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness_perception.measure import Measured
from harness_perception.seam import Detection

KEEP = 32  # entries kept (an episode writes a few per cell; older ones are removed)


@dataclass(frozen=True)
class SharedPass:
    """One pass: its detections, the backend's state before it (`state_before`), whether it
    read that state (`read_state`), and the state it left (`state_after`); states as JSON."""

    detections: list[Detection]
    state_before: dict
    read_state: bool
    state_after: dict


class SharedPasses:
    """A folder of passes by digest (hex), kept to the newest `keep`."""

    def __init__(self, folder: Path, keep: int = KEEP) -> None:
        self.folder = Path(folder)
        self.keep = keep

    def get(self, key: str) -> SharedPass | None:
        """The pass stored under `key`; None when there is none or it cannot be read."""
        try:
            data = json.loads((self.folder / f'{key}.json').read_text())
            before, after, read = data['state_before'], data['state_after'], data['read_state']
            if data['key'] != key or not isinstance(read, bool):
                return None
            if not isinstance(before, dict) or not isinstance(after, dict):
                return None
            return SharedPass([_detection(d) for d in data['detections']], before, read, after)
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return None

    def put(self, key: str, entry: SharedPass) -> None:
        """Store `entry` under `key` (written whole or not at all); a folder that cannot be
        written to costs the sharing, not the pass."""
        try:
            text = json.dumps(
                {
                    'key': key,
                    'detections': [_detection_json(d) for d in entry.detections],
                    'state_before': entry.state_before,
                    'read_state': entry.read_state,
                    'state_after': entry.state_after,
                }
            )
        except (TypeError, ValueError):  # a state JSON cannot hold: the pass stays unshared
            return
        # A name of this writer's own (not tempfile's: its import is ~5 ms of every program
        # process's start, which imports this package for the colour names).
        temporary = self.folder / f'.{key}.{os.getpid()}.{threading.get_ident()}.part'
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except OSError:
            return
        try:
            with os.fdopen(fd, 'w') as out:
                out.write(text)
            os.replace(temporary, self.folder / f'{key}.json')
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            return
        self._prune()

    def _prune(self) -> None:
        entries = []
        with contextlib.suppress(OSError):  # the folder itself may be gone with its graph
            for path in self.folder.glob('*.json'):
                with contextlib.suppress(OSError):  # another process may have removed it
                    entries.append((path.stat().st_mtime_ns, path))
        for _, path in sorted(entries)[: max(0, len(entries) - self.keep)]:
            with contextlib.suppress(OSError):
                path.unlink()


def _detection_json(d: Detection) -> dict:
    m = d.measured
    return {
        'colour': d.colour,
        'shape': m.shape,
        'position': np.asarray(m.position, float).tolist(),
        'size': np.asarray(m.size, float).tolist(),
        'top': float(m.top),
        'cameras': list(d.cameras),
        'label': d.label,
    }


def _detection(data: dict) -> Detection:
    """A Detection from its JSON, the numbers to the bit (JSON keeps a float's shortest
    repr, which reads back as the same double)."""
    position, size = _numbers(data['position']), _numbers(data['size'])
    cameras = data['cameras']
    if not isinstance(cameras, list) or not all(isinstance(c, str) for c in cameras):
        raise TypeError('cameras must be a list of names')
    text = (data['colour'], data['shape'], data['label'])
    if not all(isinstance(t, str) for t in text):
        raise TypeError('colour, shape and label must be strings')
    top = data['top']
    if isinstance(top, bool) or not isinstance(top, (int, float)):
        raise TypeError('top must be a number')
    measured = Measured(data['shape'], position, size, float(top))
    return Detection(data['colour'], measured, cameras, data['label'])


def _numbers(value) -> np.ndarray:
    """Three JSON numbers as float64; TypeError for anything else."""
    if not isinstance(value, list) or len(value) != 3:
        raise TypeError('a position or size is a list of 3 numbers')
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
        raise TypeError('a position or size is a list of 3 numbers')
    return np.array(value, dtype=float)
