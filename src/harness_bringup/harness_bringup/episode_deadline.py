"""When a supervisor takes an episode for hung.

An episode ends itself: its driver stops it at `driver.max_wall_seconds`, and every cell,
model call and service it waits on has a timeout of its own. A process that does not run at
all (stopped by SIGSTOP, deadlocked, swapped out for good) enforces none of them, and whoever
waits for its exit or its answer (`harness run`'s supervisor, a warm station's bench thread)
would wait forever: a bench of thousands of episodes would stop at the first. So the
supervisor gives each episode a deadline it keeps itself, from the same bounds, and kills the
episode's process group when it passes; the run folder is then closed as for any death.

The deadline is loose on purpose: it must never cut short an episode that still keeps its own
bounds. Until the run folder has its params.yaml (the process's start, imports and checks of
its inputs), `start_s`. From then (the run's configuration, read from that file): the
episode's `max_wall_seconds`, what the driver may run past it while it keeps its bounds
(`harness_driver.episode.longest_past_budget_s`: the call under way, the cell of its reply,
the wrap-up, the goal's verdict, a policy run to the step limit), and `overrun_s` for the
rest: the graph's start, which comes after the file (`harness run`, and a warm station's
episode that starts its graph), the goal's first judgement, and the run folder's close (the
bag, dataset and report of an episode of that length).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PARAMS = 'params.yaml'


def episode_bounds(params: Path, task: str = '') -> tuple[float, float] | None:
    """(max_wall_seconds, the longest the driver may run past it) of the episode of `task`
    whose configuration is `params` (written whole: GraphConfig.write); None while there is
    none. Bounds that cannot be worked out (it would be a bug) are endless: a failure of the
    watch's own never kills an episode."""
    if not params.is_file():
        return None
    try:
        from harness_driver.episode import longest_past_budget_s
        from harness_types.config import load_config

        config = load_config(params)
        policies = bool(config.kernel.policies)
        step_limit = _step_limit(task) if policies else 0
        past = longest_past_budget_s(
            config.driver, config.kernel.cell_timeout_seconds, policies, step_limit
        )
        return config.driver.max_wall_seconds, past
    except Exception:
        return math.inf, 0.0


def _step_limit(task: str) -> int:
    """The task's step limit (the longest of any task's for one not known here)."""
    from harness_bench.tasks import TASKS

    if task in TASKS:
        return TASKS[task].step_limit
    return max(t.step_limit for t in TASKS.values())


Bounds = Callable[[Path, str], tuple[float, float] | None]


@dataclass(frozen=True)
class EpisodeDeadline:
    """The allowances around an episode's own bounds (seconds), and how those are read: from
    the run's params.yaml and the episode's task, (max_wall_seconds, the longest its driver may
    run past them), None while the file is not there (`episode_bounds`; a test of the kill
    gives its own)."""

    start_s: float = 300.0
    overrun_s: float = 600.0
    bounds: Bounds = episode_bounds

    def watch(
        self, run: Path, task: str = '', clock: Callable[[], float] = time.monotonic
    ) -> EpisodeWatch:
        """A watch of the episode of `task` writing `run`, started now."""
        return EpisodeWatch(self, Path(run), task, clock)


# The allowances every supervisor uses (a test passes its own).
DEADLINE = EpisodeDeadline()


class EpisodeWatch:
    """One episode's deadline: `overdue()` is '' until it has passed, then why it has. Looks for
    the run folder's params.yaml at most once a second."""

    def __init__(
        self, deadline: EpisodeDeadline, run: Path, task: str, clock: Callable[[], float]
    ) -> None:
        self.deadline = deadline
        self.run = run
        self.task = task
        self.clock = clock
        self.started = clock()
        self.bounds: tuple[float, float] | None = None  # (max_wall_seconds, past it), once read
        self.began: float | None = None  # when params.yaml was first read
        self._looked = float('-inf')

    def overdue(self) -> str:
        now = self.clock()
        if self.bounds is None and now - self._looked >= 1.0:
            self._looked = now
            self.bounds = self.deadline.bounds(self.run / PARAMS, self.task)
            if self.bounds is not None:
                self.began = now
        d = self.deadline
        if self.bounds is None:
            if now - self.started <= d.start_s:
                return ''
            return (
                f'it had not begun its episode {d.start_s:.0f} s after it was started '
                f'(no {PARAMS} in {self.run})'
            )
        assert self.began is not None
        budget, past = self.bounds
        allowed = budget + past + d.overrun_s
        if now - self.began <= allowed:
            return ''
        return (
            f'it had not ended {allowed:.0f} s after its episode began: its max_wall_seconds '
            f'({budget:g} s), {past:g} s its driver may run past them while it keeps its own '
            f'bounds, and {d.overrun_s:g} s for its start and the close of its run folder'
        )


def hung(why: str) -> str:
    """What a supervisor says of the episode process it killed for `why`."""
    return f'the supervisor took it for hung and killed it: {why}'
