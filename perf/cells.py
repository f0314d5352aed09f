"""How near a scripted episode's cells run to the physics limit, and where a cell's time goes.

In one run, side by side and interleaved over `--repeats N`:

(a) the raw physics limit: the worker's own `lift_cube` station (the same model, layout 0)
    stepped with `mj_step` alone, as simulated seconds per wall second;
(b) the scripted `lift_cube` episode's cells (from the driver sending a cell to the kernel until
    its result), in times real time, recorded with the bag as the default configuration does
    (`run_episode` in this process, as perf/episode.py), and the same episode without the bag
    (for the bag's cost).

(c) what bounds (b) whatever runs around the ticks: the cells' own physics (the unrecorded
    episode's `mj_step` time, with the cube's contacts, as simulated seconds per wall second;
    in the recorded one the bag's camera frames are rendered beside it, on the same cores)
    and the worker floor (the recorded episode's commands replayed through `Worker.tick` alone:
    the shield, the physics, the task's check and the state, nothing else), each also over (a).

The target: (b) / (a) >= 0.25. The breakdown times a recorded episode's cells from inside
(timers wrapped around the functions named, in this process; the kernel's own `wall_s` of
each program call from its kernel.log):

- `physics_s`: `mj_step` in the ticks; `tick_s`: the worker core's tick (the shield, physics,
  the task's check, the state); `tick_topics_s`: the worker node's tick beyond that (the state
  topics, asking for the camera frames);
- `loop_s`: the skill server's execution loops (the ticks included);
  `execution_action_s`: the skill executions from goal to result as the skill server serves
  them (the loops included);
- `reads_s`: the skill server's read services (skills/ik, skills/observe, skills/state),
  their count by service;
- `locate_s`, `pick_s`: the kernel's program calls (its `wall_s`); `locate_perception_s`:
  `locate` less its `skills/observe` (the perception pass and the round trips);
  `pick_planning_s`: `pick` less its executions and its reads (its own checks, planning and
  the round trips);
- `cell_rest_s`: the cell less `locate` and `pick` (the program process, the cell's round
  trips between driver, kernel and program);
- `frames_gl_s`: the camera frames for the bag, rendered, encoded and published on the
  station's render thread (beside the ticks, sharing the cores); `bag_cost_s`: the recorded
  episode's cells less the unrecorded one's (medians).

The episodes run in this process, started again (once) as `harness run`'s supervisor starts an
episode process (`as_episode_process`). Prints JSON.

    python perf/cells.py [--repeats 3] [--save]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import mujoco
from _record import Target, add_save_argument, report
from arx_x5_description.embodiment import load_embodiment
from harness_bringup.processes import as_episode_process, use_wheels_ament_prefix
from harness_bringup.run import prepare, run_episode
from harness_types.config import load_config, with_overrides

from arx_x5_description.urdf import station_urdf

ROOT = Path(__file__).resolve().parents[1]
TASK = 'lift_cube'


def physics_limit(emb, urdf: str, steps: int) -> float:
    """Simulated seconds per wall second of the worker's own station for `TASK` (layout 0),
    `mj_step` alone, the arms holding their reset pose."""
    from harness_worker.worker import Worker

    worker = Worker(emb, urdf)
    try:
        worker.reset(TASK, 0, 0)
        station = worker.station
        model, data = station.model, station.data
        step = mujoco.mj_step
        t = time.perf_counter()
        for _ in range(steps):
            step(model, data)
        wall = time.perf_counter() - t
        return steps * model.opt.timestep / wall
    finally:
        worker.close()


class Timers:
    """Wall seconds and counts by name, from any thread."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = collections.defaultdict(float)
        self.counts: dict[str, int] = collections.defaultdict(int)
        self.lock = threading.Lock()
        self.on = False

    def add(self, name: str, seconds: float) -> None:
        if self.on:
            with self.lock:
                self.seconds[name] += seconds
                self.counts[name] += 1

    def wrap(self, owner, attribute: str, name) -> None:
        """Time every call of `owner.attribute` under `name` (a string, or a function of the
        call's arguments that names it)."""
        original = getattr(owner, attribute)
        timers = self

        def timed(*args, **kwargs):
            t = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                timers.add(name if isinstance(name, str) else name(*args), time.perf_counter() - t)

        setattr(owner, attribute, timed)

    def clear(self) -> None:
        self.seconds.clear()
        self.counts.clear()


def instrument(timers: Timers) -> None:
    """Timers around the functions the breakdown names (class attributes: every instance)."""
    import harness_worker.backends.mujoco as backend
    from harness_skills.execution import Engine
    from harness_skills.skill_server_node import SkillServer
    from harness_worker.worker import Worker
    from harness_worker.worker_node import WorkerNode

    class TimedMujoco:
        """The backend's `mujoco` with a timed mj_step."""

        def __getattr__(self, name):
            return getattr(mujoco, name)

        @staticmethod
        def mj_step(model, data):
            t = time.perf_counter()
            mujoco.mj_step(model, data)
            timers.add('physics', time.perf_counter() - t)

    backend.mujoco = TimedMujoco()
    timers.wrap(Worker, 'tick', 'tick')
    timers.wrap(WorkerNode, '_tick_core', 'tick_node')
    timers.wrap(WorkerNode, '_publish_frames', 'frames_publish')
    timers.wrap(Engine, 'run', 'loop')
    timers.wrap(SkillServer, '_execute', 'execution_action')
    timers.wrap(SkillServer, '_forward', lambda _self, service, *_: f'read_{service}')
    original_view = backend.MujocoStation._view

    def view(self, data, camera, depth, segmentation):
        t = time.perf_counter()
        try:
            return original_view(self, data, camera, depth, segmentation)
        finally:
            if data is not self.data:  # a render_later frame (the camera topics)
                timers.add('frames_render', time.perf_counter() - t)

    backend.MujocoStation._view = view


def worker_floor(emb, urdf: str, folder: Path) -> dict:
    """The recorded episode's commands (its run folder's ticks/*.npz, by time) replayed through
    the worker core alone in this process, on the same layout: `Worker.tick` (the shield, the
    physics with the same contacts, the task's check, the state) and nothing else, no ROS,
    skills, perception or recording. Simulated seconds per wall second: how fast the cells
    could run in any design that keeps those four in every tick."""
    import numpy as np
    from harness_worker.worker import Worker

    files = [np.load(f) for f in (folder / 'ticks').glob('*.npz')]
    files.sort(key=lambda ticks: float(ticks['time'][0]))  # in the episode's order
    commands = [c for ticks in files for c in ticks['command']]
    worker = Worker(emb, urdf)
    try:
        worker.reset(TASK, 0, 0)
        tick = worker.tick
        t = time.perf_counter()
        accepted = sum(bool(tick(c).accepted) for c in commands)
        wall = time.perf_counter() - t
        ticks = len(commands)
        return {
            'ticks': ticks,
            'accepted': accepted,
            'x_real_time': round(ticks / emb.rates.control_hz / wall, 1) if wall else None,
        }
    finally:
        worker.close()


def kernel_calls(folder: Path) -> dict[str, float]:
    """The kernel's wall seconds of each program call by name (kernel.log)."""
    out: dict[str, float] = collections.defaultdict(float)
    log = folder / 'kernel.log'
    for line in log.read_text().splitlines() if log.exists() else []:
        with contextlib.suppress(ValueError):
            entry = json.loads(line)
            if 'wall_s' in entry and isinstance(entry.get('call'), str):
                out[entry['call']] += entry['wall_s']
    return out


def episode(config_file: Path, record_bag: bool, folder: Path, timers: Timers) -> dict:
    config = with_overrides(
        load_config(config_file), 'driver', model='scripted', record_bag=record_bag
    )
    prepared = prepare(config, TASK, 0, 0, log=lambda _m: None)
    timers.clear()
    timers.on = True
    try:
        result = run_episode(prepared, folder, log=lambda _m: None)
    finally:
        timers.on = False
    s = result.summary
    control_hz = load_embodiment().rates.control_hz
    sim = s['env_steps'] / control_hz
    cells = s['phases_seconds']['cells']
    return {
        'record_bag': record_bag,
        'status': s['status'],
        'success': (s.get('outcome') or {}).get('success'),
        'env_steps': s['env_steps'],
        'sim_seconds': round(sim, 3),
        'cells_seconds': round(cells, 4),
        'cells_x_real_time': round(sim / cells, 2) if cells else None,
        'timers': {k: round(v, 4) for k, v in timers.seconds.items()},
        'counts': dict(timers.counts),
        'kernel_calls': {k: round(v, 4) for k, v in kernel_calls(folder).items()},
    }


def breakdown(e: dict) -> dict:
    """Where one recorded episode's cells went (seconds; see the module's docstring)."""
    t, k, n = e['timers'], e['kernel_calls'], e['counts']
    reads = {name[5:]: t[name] for name in t if name.startswith('read_')}
    locate, pick = k.get('locate', 0.0), k.get('pick', 0.0)
    observe = reads.get('observe', 0.0)
    out = {
        'cells_s': e['cells_seconds'],
        'ticks': n.get('tick', 0),
        'physics_s': t.get('physics', 0.0),
        'tick_s': t.get('tick', 0.0),
        'tick_topics_s': t.get('tick_node', 0.0) - t.get('tick', 0.0),
        'loop_s': t.get('loop', 0.0),
        'execution_action_s': t.get('execution_action', 0.0),
        'executions': n.get('execution_action', 0),
        'reads_s': {name: round(v, 4) for name, v in reads.items()},
        'read_counts': {name[5:]: c for name, c in n.items() if name.startswith('read_')},
        'locate_s': locate,
        'locate_perception_s': locate - observe,
        'pick_s': pick,
        'pick_planning_s': pick
        - t.get('execution_action', 0.0)
        - sum(v for name, v in reads.items() if name != 'observe'),
        'cell_rest_s': e['cells_seconds'] - sum(k.values()),
        'frames_gl_s': t.get('frames_render', 0.0) + t.get('frames_publish', 0.0),
        'frame_batches': n.get('frames_publish', 0),
    }
    return {key: round(v, 4) if isinstance(v, float) else v for key, v in out.items()}


def main() -> None:
    use_wheels_ament_prefix()  # the wheels' ROS packages, as `harness` finds them
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=3, help='interleaved rounds')
    parser.add_argument(
        '--physics-steps', type=int, default=2000, help='mj_step calls per physics measurement'
    )
    add_save_argument(parser)
    args = parser.parse_args()
    as_episode_process()  # the episodes run in this process
    os.environ.setdefault('MUJOCO_GL', 'egl')
    emb = load_embodiment()
    urdf = station_urdf(config=emb.path)
    config_file = ROOT / 'config' / 'harness.yaml'
    timers = Timers()
    instrument(timers)
    limits, recorded, unrecorded, floors = [], [], [], []
    with tempfile.TemporaryDirectory() as out:
        for n in range(args.repeats):
            limits.append(physics_limit(emb, urdf, args.physics_steps))
            recorded.append(episode(config_file, True, Path(out) / f'bag-{n}', timers))
            floors.append(worker_floor(emb, urdf, Path(out) / f'bag-{n}'))
            unrecorded.append(episode(config_file, False, Path(out) / f'nobag-{n}', timers))
            limits.append(physics_limit(emb, urdf, args.physics_steps))

    def median(values):
        return statistics.median(values) if values else None

    limit = median(limits)
    cells_x = median([e['cells_x_real_time'] for e in recorded if e['cells_x_real_time']])
    cells_x_unrecorded = median(
        [e['cells_x_real_time'] for e in unrecorded if e['cells_x_real_time']]
    )
    ratio = cells_x / limit if cells_x and limit else 0.0
    parts = [breakdown(e) for e in recorded]
    typical = {
        key: round(median([p[key] for p in parts]), 4)
        for key in parts[0]
        if isinstance(parts[0][key], (int, float))
    }
    floor = median([f['x_real_time'] for f in floors if f['x_real_time']])
    cell_physics = median(
        [
            e['sim_seconds'] / e['timers']['physics']
            for e in unrecorded
            if e['timers'].get('physics')
        ]
    )
    typical['bag_cost_s'] = round(
        median([e['cells_seconds'] for e in recorded])
        - median([e['cells_seconds'] for e in unrecorded]),
        4,
    )
    report(
        {
            'bench': 'cells',
            'task': TASK,
            'layout': 0,
            'repeats': args.repeats,
            'physics_limit_x_real_time': [round(v, 1) for v in limits],
            'physics_limit_x_real_time_median': round(limit, 1),
            'cells_x_real_time_median': cells_x,
            'cells_x_real_time_median_without_bag': cells_x_unrecorded,
            'cells_over_physics_limit': round(ratio, 4),
            # What bounds the cells below the raw limit whatever runs around the ticks:
            'cell_physics_x_real_time_median': round(cell_physics, 1) if cell_physics else None,
            'cell_physics_over_physics_limit': round(cell_physics / limit, 4)
            if cell_physics and limit
            else None,
            'worker_floor_x_real_time_median': floor,
            'worker_floor_over_physics_limit': round(floor / limit, 4) if floor and limit else None,
            'worker_floors': floors,
            'breakdown_median_s': typical,
            'breakdowns': parts,
            'episodes': recorded + unrecorded,
        },
        [
            Target(
                f"scripted {TASK}'s cells (recorded) over the raw physics limit, medians",
                round(ratio, 4),
                '>=',
                0.25,
            )
        ],
        args.save,
    )


if __name__ == '__main__':
    main()
