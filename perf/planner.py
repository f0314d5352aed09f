"""Milliseconds per joint-space plan: the worker's own RRT-Connect (harness_worker.planner, as
the `plan` service calls it) against OMPL's RRTConnect (the planner MoveIt plans with), on the
same queries with the same state-validity check. Prints JSON.

The queries come from the bench tasks: a worker is reset on each task and layout, and each arm
plans, as the worker's `plan` would, from home to a pre-grasp pose above each object on its
side (`reach`: the straight joint line is usually free), and between low poses at two objects
(fingers around a block, inside a bowl, on a button) whose straight joint line hits the table,
an object or the other arm (`around`: the planner must search; the longest such moves of each
arm and scene). Goals are the project's IK (`scripted_motion.reach`: the TCP pointing as
steeply down as the arm allows); goals in collision are left out.

Both planners get the worker's check (`station.arm_collides`: the arm against the table, the
objects and the other arm), counted. The harness planner runs with the worker's arguments
(plan_path's defaults; seed = the query's index, where the worker passes its tick count).
OMPL: a RealVectorStateSpace of the 6 joints with the embodiment's limits, the harness
planner's motion-check resolution (longest valid segment = its `resolution`; OMPL measures it
in L2, the harness in the largest joint step, so OMPL samples a segment at least as densely),
RRTConnect with range = the harness planner's `step`, a time limit per solve, then OMPL's
PathSimplifier (SimpleSetup.simplifySolution within a time limit: partial shortcuts, B-spline
smoothing, vertex reduction; it stops when nothing improves). Times are the planner calls alone
(for OMPL solve + simplify, after setup), over every query, solved or not. Path lengths are the
summed L2 joint distances (rad) of the returned waypoints. Every returned path is checked
again with the project's segment check at its resolution (`invalid_paths`: the harness
planner's paths pass by construction, its planner samples the same points) and at a fifth of it
(`invalid_paths_at_finer_resolution`: a referee neither planner used).

OMPL (ompl on PyPI, pinned below) is not in the project's requirements: the first run installs
it into build/perf-ompl (git-ignored) with pip; without a reachable index the JSON says OMPL
was not measured, and why.

    python perf/planner.py [--layouts 2] [--around 2] [--time-limit 1.0] [--seed 1]
"""

import argparse
import importlib
import importlib.metadata
import inspect
import subprocess
import sys
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from _record import add_save_argument
from _record import report as print_report
from arx_x5_description.embodiment import load_embodiment
from harness_bench.tasks import TASKS
from harness_testing.scripted_motion import reach
from harness_types.robot_state import arm_slice
from harness_worker.planner import _segment_free, plan_path
from harness_worker.worker import Worker

from arx_x5_description.urdf import station_urdf

OMPL_VERSION = '2.0.1'
OMPL_TARGET = Path(__file__).resolve().parents[1] / 'build' / 'perf-ompl'
PRE_GRASP_M = 0.06  # above the object's top: where a pick starts its descent
FINER = 5  # paths are also checked at resolution / FINER: a referee neither planner used
# The worker calls plan_path with its defaults (and seed=step): the same numbers for OMPL.
HARNESS = {k: p.default for k, p in inspect.signature(plan_path).parameters.items()}
RESOLUTION, STEP, MAX_NODES = HARNESS['resolution'], HARNESS['step'], HARNESS['max_nodes']


# OMPL, installed on first use -------------------------------------------------------------


def load_ompl() -> tuple[SimpleNamespace | None, str]:
    """(OMPL's base, geometric and util modules, its version), or (None, why not)."""
    if OMPL_TARGET.is_dir():
        sys.path.insert(0, str(OMPL_TARGET))
    try:
        return _import_ompl()
    except ImportError:
        pass
    pip = [sys.executable, '-m', 'pip', 'install', '--target', str(OMPL_TARGET)]
    try:
        done = subprocess.run(
            [*pip, f'ompl=={OMPL_VERSION}'], capture_output=True, text=True, timeout=600
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f'pip could not run: {exc}'
    sys.stderr.write(done.stdout + done.stderr)  # stdout is for the JSON
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ['no output'])[-1]
        return None, f'pip could not install ompl=={OMPL_VERSION} into {OMPL_TARGET}: {last}'
    if str(OMPL_TARGET) not in sys.path:
        sys.path.insert(0, str(OMPL_TARGET))
    importlib.invalidate_caches()
    try:
        return _import_ompl()
    except (ImportError, OSError) as exc:
        return None, f'ompl=={OMPL_VERSION} was installed but does not import: {exc}'


def _import_ompl() -> tuple[SimpleNamespace, str]:
    from ompl import base, geometric, util

    util.setLogLevel(util.LOG_WARN)  # OMPL writes its info lines to stdout, the JSON's
    modules = SimpleNamespace(base=base, geometric=geometric, util=util)
    return modules, importlib.metadata.version('ompl')


# Queries ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    scene: str
    arm: str
    kind: str  # 'reach' (home to a pre-grasp) or 'around' (low to low, straight line blocked)
    what: str
    start: np.ndarray
    goal: np.ndarray


def _top(obj, position: np.ndarray) -> float:
    """World z of an object's top (a box's centre + half height, a bowl's bottom + height, a
    cylinder's centre + half height)."""
    return float(position[2] + (obj.size[2] if obj.shape == 'box' else obj.size[1]))


def _low(obj, position: np.ndarray) -> np.ndarray:
    """Where the TCP goes low at an object: around a block, inside a bowl, on a button."""
    x, y, z = position
    if obj.shape == 'bowl':
        return np.array([x, y, z + 0.03])
    if obj.shape == 'cylinder':
        return np.array([x, y, _top(obj, position) + 0.005])
    return np.array([x, y, z])


def scene_queries(worker: Worker, scene: str, around: int) -> list[Query]:
    """The reach and around queries of the scene the worker was just reset on."""
    station = worker.station
    objects = [(o, station.object_pose(o.name)[0]) for o in station.objects if o.collide]
    out = []
    for arm in ('left', 'right'):
        kin = worker.kinematics.arms[arm]
        home = np.clip(worker.measured()[arm_slice(arm)], kin.lower, kin.upper)

        def collides(q, arm=arm):
            return station.arm_collides(arm, q)

        def solve(point, kin=kin, collides=collides):
            try:
                q = reach(kin, point)
            except ValueError:
                return None
            return None if collides(q) else q

        for obj, p in objects:
            if (p[0] < 0) != (arm == 'left'):  # pick's choice: the arm on the object's side
                continue
            q = solve(np.array([p[0], p[1], _top(obj, p) + PRE_GRASP_M]))
            if q is not None:
                out.append(Query(scene, arm, 'reach', f'home -> above {obj.name}', home, q))
        low = [(obj.name, q) for obj, p in objects if (q := solve(_low(obj, p))) is not None]
        blocked = sorted(
            (
                (-float(np.linalg.norm(qb - qa)), a, b, k, m)
                for k, (a, qa) in enumerate(low)
                for m, (b, qb) in enumerate(low)
                if a != b and not _segment_free(qa, qb, collides, RESOLUTION)
            ),
            key=lambda t: t[:3],  # the longest blocked moves first
        )
        for _, a, b, k, m in blocked[:around]:
            what = f'low at {a} -> low at {b}'
            out.append(Query(scene, arm, 'around', what, low[k][1], low[m][1]))
    return out


# The planners -----------------------------------------------------------------------------


class Counted:
    """The worker's check of one arm, counting its calls."""

    def __init__(self, station, arm: str) -> None:
        self.station, self.arm, self.n = station, arm, 0

    def __call__(self, q: np.ndarray) -> bool:
        self.n += 1
        return self.station.arm_collides(self.arm, q)


def run_harness(query: Query, kin, collides: Counted, seed: int) -> dict:
    t = time.perf_counter()
    result = plan_path(query.start, query.goal, kin.lower, kin.upper, collides, seed=seed)
    seconds = time.perf_counter() - t
    return {'ok': result.ok, 's': seconds, 'checks': collides.n, 'path': result.path}


def run_ompl(
    ompl: SimpleNamespace, query: Query, kin, collides: Counted, time_limit: float, simplify: float
) -> dict:
    ob, og = ompl.base, ompl.geometric
    space = ob.RealVectorStateSpace(6)
    bounds = ob.RealVectorBounds(6)
    for i, (low, high) in enumerate(zip(kin.lower, kin.upper, strict=True)):
        bounds.setLow(i, float(low))
        bounds.setHigh(i, float(high))
    space.setBounds(bounds)
    space.setLongestValidSegmentFraction(RESOLUTION / space.getMaximumExtent())
    setup = og.SimpleSetup(space)
    setup.setStateValidityChecker(lambda s: not collides(np.array([s[i] for i in range(6)])))
    planner = og.RRTConnect(setup.getSpaceInformation())
    planner.setRange(STEP)
    setup.setPlanner(planner)
    start, goal = space.allocState(), space.allocState()
    for i in range(6):
        start[i], goal[i] = float(query.start[i]), float(query.goal[i])
    setup.setStartAndGoalStates(start, goal)
    setup.setup()
    t = time.perf_counter()
    status = setup.solve(time_limit)
    ok = status.getStatus() == ob.PlannerStatus.EXACT_SOLUTION
    solve_s, solve_checks = time.perf_counter() - t, collides.n
    if ok:
        setup.simplifySolution(simplify)
    seconds = time.perf_counter() - t
    path = []
    if ok:
        path = [np.array([s[i] for i in range(6)]) for s in setup.getSolutionPath().getStates()]
    return {
        'ok': ok,
        's': seconds,
        'solve_s': solve_s,
        'checks': collides.n,
        'solve_checks': solve_checks,
        'path': path,
    }


def path_valid(
    path: list[np.ndarray], query: Query, kin, collides, resolution: float = RESOLUTION
) -> bool:
    """From the start to the goal, within the limits, every segment free at `resolution`
    (the project's own segment check)."""
    if len(path) < 2:
        return False
    if not (np.allclose(path[0], query.start) and np.allclose(path[-1], query.goal)):
        return False
    if any(np.any(q < kin.lower - 1e-9) or np.any(q > kin.upper + 1e-9) for q in path):
        return False
    return all(_segment_free(a, b, collides, resolution) for a, b in pairwise(path))


def length(path: list[np.ndarray]) -> float:
    return float(sum(np.linalg.norm(b - a) for a, b in pairwise(path)))


# Numbers ----------------------------------------------------------------------------------


def _median(values) -> float | None:
    return round(float(np.median(values)), 3) if len(values) else None


def summary(runs: list[dict]) -> dict:
    if not runs:
        return {'queries': 0}
    ms = np.array([r['s'] for r in runs]) * 1e3
    solved = [r for r in runs if r['ok']]
    out = {
        'queries': len(runs),
        'success': len(solved),
        'median_ms': round(float(np.median(ms)), 2),
        'p90_ms': round(float(np.percentile(ms, 90)), 2),
        'max_ms': round(float(ms.max()), 2),
        'median_path_length_rad': _median([r['length'] for r in solved]),
        'median_waypoints': _median([len(r['path']) for r in solved]),
        'median_validity_checks': _median([r['checks'] for r in runs]),
        'invalid_paths': sum(not r['valid'] for r in solved),
        'invalid_paths_at_finer_resolution': sum(not r['valid_finer'] for r in solved),
    }
    if 'solve_s' in runs[0]:  # OMPL: the solve alone, before the simplifier
        solve_ms = np.array([r['solve_s'] for r in runs]) * 1e3
        out['solve_only'] = {
            'median_ms': round(float(np.median(solve_ms)), 2),
            'p90_ms': round(float(np.percentile(solve_ms, 90)), 2),
            'max_ms': round(float(solve_ms.max()), 2),
            'median_validity_checks': _median([r['solve_checks'] for r in runs]),
        }
    return out


def report(runs: list[dict]) -> dict:
    out = summary(runs)
    out['by_kind'] = {k: summary([r for r in runs if r['kind'] == k]) for k in ('reach', 'around')}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--tasks', nargs='*', default=sorted(TASKS), help='bench tasks')
    parser.add_argument('--layouts', type=int, default=2, help='layouts 0..N-1 of each task')
    parser.add_argument('--around', type=int, default=2, help='around queries per arm and scene')
    parser.add_argument('--time-limit', type=float, default=1.0, help='OMPL solve limit (s)')
    parser.add_argument('--simplify-limit', type=float, default=1.0, help='OMPL simplify (s)')
    parser.add_argument('--seed', type=int, default=1, help="OMPL's seed (> 0); harness: + i")
    add_save_argument(parser)
    args = parser.parse_args()
    ompl, version = load_ompl()
    if ompl is not None:
        ompl.util.RNG.setSeed(args.seed)  # before any planner exists: deterministic sampling
    emb = load_embodiment()
    worker = Worker(emb, station_urdf())
    token, runs, scenes, failed = '', {'harness': [], 'ompl': []}, [], []
    queries = 0
    for task in args.tasks:
        for layout in range(min(args.layouts, TASKS[task].layouts)):
            token = worker.reset(task, layout, 0, token).token
            scenes.append(f'{task}/{layout}')
            for query in scene_queries(worker, scenes[-1], args.around):
                kin = worker.kinematics.arms[query.arm]
                check = Counted(worker.station, query.arm)
                planned = {'harness': run_harness(query, kin, check, args.seed + queries)}
                if ompl is not None:
                    check = Counted(worker.station, query.arm)
                    planned['ompl'] = run_ompl(
                        ompl, query, kin, check, args.time_limit, args.simplify_limit
                    )
                verify = Counted(worker.station, query.arm)
                for name, r in planned.items():
                    r['kind'] = query.kind
                    r['length'] = length(r['path'])
                    r['valid'] = not r['ok'] or path_valid(r['path'], query, kin, verify)
                    r['valid_finer'] = not r['ok'] or path_valid(
                        r['path'], query, kin, verify, RESOLUTION / FINER
                    )
                    runs[name].append(r)
                    if not r['ok'] or not r['valid']:
                        why = 'invalid path' if r['ok'] else 'no path'
                        failed.append(f'{name}: {query.scene} {query.arm} {query.what}: {why}')
                queries += 1
    worker.close()
    harness = report(runs['harness'])
    result = {
        'bench': 'planner',
        'ompl_version': version if ompl is not None else None,
        'queries': queries,
        'scenes': scenes,
        'settings': {
            'resolution_rad': RESOLUTION,
            'step_rad': STEP,
            'harness_max_nodes': MAX_NODES,
            'ompl_range_rad': STEP,
            'ompl_longest_valid_segment_rad': RESOLUTION,
            'finer_check_resolution_rad': RESOLUTION / FINER,
            'ompl_time_limit_s': args.time_limit,
            'ompl_simplify_limit_s': args.simplify_limit,
            'ompl_simplifier': 'SimpleSetup.simplifySolution (PathSimplifier.simplify)',
            'seed': args.seed,
        },
        'rrt_connect_harness': harness,
    }
    result['failed_or_invalid'] = failed
    if ompl is None:
        result['ompl_rrt_connect'] = None
        result['ompl_not_measured'] = version
    else:
        theirs = report(runs['ompl'])
        result['ompl_rrt_connect'] = theirs
        result['ratio_median_ms'] = round(theirs['median_ms'] / harness['median_ms'], 2)
        solve_only = theirs['solve_only']['median_ms'] / harness['median_ms']
        result['ratio_median_ms_solve_only'] = round(solve_only, 2)
        both = [
            (h['kind'], o['length'] / h['length'])
            for h, o in zip(runs['harness'], runs['ompl'], strict=True)
            if h['ok'] and o['ok'] and h['length'] > 0
        ]
        result['median_path_length_ratio'] = _median([r for _, r in both])
        result['median_path_length_ratio_by_kind'] = {
            k: _median([r for kind, r in both if kind == k]) for k in ('reach', 'around')
        }
        result['ratio_median_ms_by_kind'] = {
            k: round(theirs['by_kind'][k]['median_ms'] / harness['by_kind'][k]['median_ms'], 2)
            for k in ('reach', 'around')
            if harness['by_kind'][k].get('queries')
        }
    print_report(result, [], args.save)


if __name__ == '__main__':
    main()
