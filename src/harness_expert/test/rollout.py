"""Roll a policy out on the in-process worker (no ROS): the loop the harness runs, for tests and
measurements. The test side may read the simulator (the outcome); the policy never does.

    worker = Worker(load_embodiment(), station_urdf())
    result = rollout(worker, ScriptedExpert(...), 'lift_cube', layout=0, seed=0)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from harness_bench.task import Outcome
from harness_policy.observation import observation, reply_of
from harness_worker.worker import Worker

CAMERAS = ['cam_head', 'cam_left_wrist', 'cam_right_wrist']


@dataclass
class Rollout:
    """How one run went: the task's outcome, whether the policy said done (and its `info`),
    the ticks applied, the chunks asked for, the shield's rejections (a rejected row ends the
    run: it is a bug in the policy's actions), whether the episode ended (success or the step
    limit) and the wall time."""

    task: str
    layout: int
    seed: int
    outcome: Outcome
    done: bool
    info: str
    ticks: int
    chunks: int
    rejections: list[str] = field(default_factory=list)
    episode_ended: bool = False
    wall_s: float = 0.0

    @property
    def success(self) -> bool:
        return self.outcome.success


def rollout(
    worker: Worker,
    policy,
    task: str,
    layout: int,
    seed: int,
    cameras: list[str] | None = None,
    max_ticks: int | None = None,
) -> Rollout:
    """Reset the worker to `task`/`layout`/`seed`, reset the policy, then stream its chunks
    through the worker (every row through the shield) until it says done, a row is rejected,
    the episode ends or `max_ticks` (default: the task's step limit) pass; the outcome is
    judged at that moment."""
    start = time.perf_counter()
    token = worker._token or ''
    r = worker.reset(task, layout, seed, token=token)
    policy.reset()
    limit = max_ticks if max_ticks is not None else worker.task.step_limit
    cams = cameras or CAMERAS
    ticks = chunks = 0
    done, info, ended, rejections = False, '', False, []
    state = r.state
    while ticks < limit and not done and not ended and not rejections:
        views = worker.observe(cams, True, False)
        answer = reply_of(policy.infer(observation(state, views, r.instruction)))
        chunks += 1
        done, info = answer.done, answer.info or info
        for row in answer.actions:
            t = worker.tick(row)
            state = t.state
            if not t.accepted:
                if t.episode_ended:
                    ended = True
                else:
                    rejections = list(t.reasons)
                break
            ticks += 1
            if t.episode_ended:
                ended = True
                break
    if hasattr(policy, 'close'):
        policy.close()
    outcome = worker.outcome(r.token)
    return Rollout(
        task,
        layout,
        seed,
        outcome,
        done,
        info,
        ticks,
        chunks,
        rejections,
        ended,
        time.perf_counter() - start,
    )
