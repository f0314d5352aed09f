"""The run folder of an episode: summary.json, events.jsonl, kernel.log, images/."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def _default(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return str(value)


class RunFolder:
    """Created at once, so that an episode that fails early still leaves its folder."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        (self.path / 'images').mkdir(parents=True, exist_ok=True)
        self._events = open(self.path / 'events.jsonl', 'a', buffering=1)  # noqa: SIM115
        self._images = 0
        self._publish: Callable[[str], None] | None = None  # events also go out on ROS
        self._unpublished: list[str] = []

    @property
    def bag_path(self) -> Path:
        return self.path / 'bag'

    @property
    def kernel_log(self) -> Path:
        return self.path / 'kernel.log'

    @property
    def workspace(self) -> Path:
        return self.path / 'workspace'

    def publish_to(self, publish: Callable[[str], None]) -> None:
        """From now on every event line also goes to `publish` (harness/events); the lines
        written before go first, so the published events are every line of events.jsonl."""
        for line in self._unpublished:
            publish(line)
        self._unpublished = []
        self._publish = publish

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
        return relative

    def summary(self, summary: dict) -> None:
        text = json.dumps(summary, indent=2, default=_default) + '\n'
        (self.path / 'summary.json').write_text(text)

    def close(self) -> None:
        self._events.close()
