"""A program cell's result and the turn report measured after it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from harness_types.execution import Execution
from harness_types.scene import SceneReport

STATUSES = ('ok', 'escalated', 'episode_ended', 'finished', 'error')


@dataclass(frozen=True)
class ShownImage:
    """An image a program attached to its turn report with show()."""

    caption: str
    rgb: np.ndarray


@dataclass
class CellResult:
    """`status` is one of STATUSES; `output` what the program printed (clipped), `notes` the
    kernel's own lines about the cell (never the program's text), `traceback` the program's
    own frames on an error, `summary` what it passed to finish(); `stopped_by` the
    execution whose event escalated or ended the episode; `executions` every execution of the
    cell in order; `images` what it showed; `restored` API names it rebound; `events_handled`
    events its handlers absorbed; `scene` the located objects and grips measured after it;
    `strategy` and `strategy_kind` what start() chose (empty before)."""

    status: str
    output: str = ''
    traceback: str = ''
    summary: str = ''
    stopped_by: Execution | None = None
    executions: list[Execution] = field(default_factory=list)
    images: list[ShownImage] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    events_handled: int = 0
    scene: SceneReport = field(default_factory=SceneReport)
    strategy: str = ''  # the episode's strategy once start() chose it (A, B, C)
    strategy_kind: str = ''  # the task kind start() named
    notes: list[str] = field(default_factory=list)  # the kernel's own lines, never the program's
