"""The run folder of an episode: summary.json, events.jsonl, kernel.log, images/."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from harness_types.cell import CellResult
from harness_types.whole_file import write_whole

WORKSPACE = 'workspace'  # the program's files, moved in when its kernel stops
BAG = 'bag'  # the episode's rosbag2, closed when it holds a metadata.yaml


def _default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return str(value)


def write_summary(folder: Path, summary: dict) -> None:
    """<folder>/summary.json, whole or not at all: written beside and renamed over (a process
    killed mid-write leaves the previous one, never a truncated file)."""
    text = json.dumps(summary, indent=2, default=_default) + '\n'
    write_whole(Path(folder) / 'summary.json', text.encode())


def update_summary(folder: Path, change: Callable[[dict], None]) -> None:
    """<folder>/summary.json read, changed in place by `change` and written whole again; a
    summary that cannot be read or written is left as it is (what is added after the
    episode's own summary: timings of the report, the dataset, the whole command)."""
    try:
        summary = json.loads((Path(folder) / 'summary.json').read_text())
    except (OSError, ValueError):
        return
    change(summary)
    with contextlib.suppress(OSError):
        write_summary(folder, summary)


def file_inside(folder: Path, name: object) -> Path | None:
    """The file `name` (as events.jsonl names it) of the run folder `folder`: a relative path
    that, links followed, stays inside the folder and is a regular file; None otherwise (an
    absolute path, a way out through .. or a link, a folder, nothing). What a crafted run
    folder names elsewhere is never read."""
    if not isinstance(name, str) or not name or Path(name).is_absolute():
        return None
    root = Path(folder).resolve()
    try:
        path = (root / name).resolve()
        if root not in path.parents or not path.is_file():
            return None
    except (OSError, RuntimeError, ValueError):  # a link loop, a NUL in the name
        return None
    return path


def found_in_runs(root: Path, relative: str) -> list[Path]:
    """Every regular file `relative` (e.g. 'summary.json', 'meta/info.json') below `root`, in
    path order: what the tools that read benches, collections and datasets look for. The walk
    follows no link and never enters a run folder's (a folder with a summary.json or an
    events.jsonl) WORKSPACE:
    the program's files are not the harness's, and a program that wrote a run folder of its own
    there, or a thousand nested folders, is neither read as an episode nor breaks the walk."""
    found, folders = [], [Path(root)]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:  # gone, or not ours to read
            continue
        names = {e.name for e in entries}
        run = 'summary.json' in names or 'events.jsonl' in names  # (a summary may be missing)
        target = folder / relative
        with contextlib.suppress(OSError):
            if target.is_file() and not any(p.is_symlink() for p in _below(folder, target)):
                found.append(target)
        folders += [
            Path(e.path)
            for e in entries
            if e.is_dir(follow_symlinks=False) and not (run and e.name == WORKSPACE)
        ]
    return sorted(found)


def _below(folder: Path, path: Path) -> list[Path]:
    """`path` and each folder between it and `folder`."""
    out = []
    while path != folder:
        out.append(path)
        path = path.parent
    return out


def read_events(folder: Path) -> list[dict]:
    """The events of <folder>/events.jsonl ([] without one); a line cut short by a crash, or
    one that is not a JSON object in UTF-8 (no event of ours), is left out, the rest still
    reads."""
    path = Path(folder) / 'events.jsonl'
    if not path.is_file():
        return []
    events = []
    for line in path.read_bytes().splitlines():
        try:
            event = json.loads(line.decode())
        except (ValueError, RecursionError):  # (not UTF-8, not JSON; nested past the parser)
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


class RunFolder:
    """Created at once, so that an episode that fails early still leaves its folder."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        (self.path / 'images').mkdir(parents=True, exist_ok=True)
        self._events = open(self.path / 'events.jsonl', 'a', buffering=1)  # noqa: SIM115
        self._images = 0
        self._publish: Callable[[str], None] | None = None  # events also go out on ROS
        self._unpublished: list[str] = []
        self._publish_image: Callable[[str, bytes], None] | None = None
        self._unpublished_images: list[tuple[str, bytes]] = []

    @property
    def bag_path(self) -> Path:
        return self.path / BAG

    @property
    def kernel_log(self) -> Path:
        return self.path / 'kernel.log'

    @property
    def workspace(self) -> Path:
        return self.path / WORKSPACE

    def publish_to(
        self,
        publish: Callable[[str], None],
        publish_image: Callable[[str, bytes], None] | None = None,
    ) -> None:
        """From now on every event line also goes to `publish` (harness/events) and every
        image sent to the model to `publish_image` (harness/model_images); what was written
        before goes first, so the published events are every line of events.jsonl."""
        for line in self._unpublished:
            publish(line)
        for name, data in self._unpublished_images if publish_image else ():
            publish_image(name, data)
        self._unpublished, self._unpublished_images = [], []
        self._publish, self._publish_image = publish, publish_image

    def event(self, record: dict) -> None:
        line = json.dumps(record, default=_default)
        self._events.write(line + '\n')
        if self._publish is not None:
            self._publish(line)
        else:
            self._unpublished.append(line)

    def image(self, name: str, data: bytes) -> str:
        """Save a PNG sent to the model; returns its path relative to the folder."""
        self._images += 1
        relative = f'images/{self._images:03d}-{name}.png'
        (self.path / relative).write_bytes(data)
        if self._publish_image is not None:
            self._publish_image(relative, data)
        elif self._publish is None:
            self._unpublished_images.append((relative, data))
        return relative

    def summary(self, summary: dict) -> None:
        write_summary(self.path, summary)

    def close(self) -> None:
        self._events.close()


def cell_record(cell: CellResult, call: int, code: str) -> dict:
    """A cell as one line of events.jsonl: its code, result, skill events and scene report."""
    stopped = cell.stopped_by
    return {
        'type': 'cell',
        'call': call,
        'code': code,
        'status': cell.status,
        'output': cell.output,
        'notes': cell.notes,
        'traceback': cell.traceback,
        'event': stopped.event if stopped else None,
        'event_detail': stopped.detail if stopped else '',
        'events_handled': cell.events_handled,
        'restored': cell.restored,
        'executions': [
            {
                'skill': e.skill,
                'arm': e.arm,
                'event': e.event,
                'detail': e.detail,
                'ticks': len(e.trace),
            }
            for e in cell.executions
        ],
        'scene': {
            'measured': cell.scene.measured,
            'objects': [
                {'id': o.id, 'label': o.label, 'position': o.position, 'size': o.size}
                for o in cell.scene.objects
            ],
            'holds': {arm: obj or '' for arm, obj in cell.scene.held.items()},
        },
        'shown_images': [i.caption for i in cell.images],
    }


def policy_run_records(cell: CellResult, call: int) -> list[dict]:
    """A cell's policy runs as events.jsonl lines (a refused run_policy call has none)."""
    return [
        {
            'type': 'policy_run',
            'call': call,
            'event': e.event,
            'detail': e.detail,
            'chunks': e.chunks,
            'actions': e.actions,
            'ticks': len(e.trace),
            'steps': [e.start_step, e.end_step],
        }
        for e in cell.executions
        if e.skill == 'run_policy' and e.chunks is not None
    ]
