"""When a supervisor takes an episode for hung.

An episode ends itself: its driver stops it at `driver.max_wall_seconds`, and every cell,
model call and service it waits on has a timeout of its own. A process that does not run at
all (stopped by SIGSTOP, deadlocked, swapped out for good) enforces none of them, and whoever
waits for its exit or its answer (`harness run`'s supervisor, a warm station's bench thread)
would wait forever: a bench of thousands of episodes would stop at the first. So the
supervisor gives each episode a deadline it keeps itself, from the same budget, and kills the
episode's process group when it passes; the run folder is then closed as for any death.

The deadline is loose on purpose: it never cuts short an episode that is still enforcing its
own budgets. Until the run folder has its params.yaml (the process's start, imports and
checks of its inputs, a warm station's graph start), `start_s`; from then, the episode's
`max_wall_seconds` (read from that params.yaml) and `overrun_s` for what may run past it: a
cell or model call under way (each bounded by its own timeout, 120 s by default) and the run
folder's close (the bag, dataset and report of an episode of max_wall_seconds).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PARAMS = 'params.yaml'


@dataclass(frozen=True)
class EpisodeDeadline:
    """The allowances around an episode's own budget (seconds)."""

    start_s: float = 300.0
    overrun_s: float = 600.0

    def watch(self, run: Path, clock: Callable[[], float] = time.monotonic) -> EpisodeWatch:
        """A watch of the episode writing `run`, started now."""
        return EpisodeWatch(self, Path(run), clock)


# The allowances every supervisor uses (a test passes its own).
DEADLINE = EpisodeDeadline()


class EpisodeWatch:
    """One episode's deadline: `overdue()` is '' until it has passed, then why it has. Looks for
    the run folder's params.yaml at most once a second."""

    def __init__(self, deadline: EpisodeDeadline, run: Path, clock: Callable[[], float]) -> None:
        self.deadline = deadline
        self.run = run
        self.clock = clock
        self.started = clock()
        self.budget_s: float | None = None  # max_wall_seconds, once params.yaml is read
        self.began: float | None = None  # when params.yaml was first read
        self._looked = float('-inf')

    def overdue(self) -> str:
        now = self.clock()
        if self.budget_s is None and now - self._looked >= 1.0:
            self._looked = now
            self.budget_s = episode_budget_s(self.run / PARAMS)
            if self.budget_s is not None:
                self.began = now
        d = self.deadline
        if self.budget_s is None:
            if now - self.started <= d.start_s:
                return ''
            return (
                f'it had not begun its episode {d.start_s:.0f} s after it was started '
                f'(no {PARAMS} in {self.run})'
            )
        assert self.began is not None
        if now - self.began <= self.budget_s + d.overrun_s:
            return ''
        return (
            f'it had not ended {self.budget_s + d.overrun_s:.0f} s after its episode began: '
            f'its max_wall_seconds ({self.budget_s:g} s) and {d.overrun_s:g} s for a call '
            'under way and the close of its run folder'
        )


def episode_budget_s(params: Path) -> float | None:
    """The episode's driver.max_wall_seconds from its params.yaml; None while there is none that
    can be read (not yet written, or written only in part: the value must be there, as every
    params.yaml an episode writes has it, never a default taken for it)."""
    import yaml

    try:
        doc = yaml.safe_load(params.read_text())
        value = doc['driver']['ros__parameters']['max_wall_seconds']
    except (OSError, yaml.YAMLError, TypeError, KeyError):
        return None  # looked at again a second later
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def hung(why: str) -> str:
    """What a supervisor says of the episode process it killed for `why`."""
    return f'the supervisor took it for hung and killed it: {why}'
