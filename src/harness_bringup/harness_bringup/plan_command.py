"""`harness plan-collection SOURCE... --budget N --out PLAN`: the next demonstration collection
planned from benches, gates and datasets (harness_learning.collection_plan); `harness demos
--plan PLAN` collects it as it is."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness_bringup.arguments import _positive_int, _positive_int_at_most, _seed, seeds_past_int64
from harness_bringup.console import fail as _fail
from harness_bringup.console import say as _say

POOL_BASE = 20_000  # the seeds coverage draws from: apart from benches' and gates' usual bases
POOL_SIZE = 300
# Each seed of the pool is a layout sampled and kept per task: more than this would exhaust
# memory (10^11 raised MemoryError) long before the plan was made.
MAX_POOL_SIZE = 100_000


def add_parser(sub) -> None:
    plan = sub.add_parser(
        'plan-collection',
        help='plan the next demonstration collection from benches, gates and datasets',
        description='Read SOURCEs (bench folders of sampled layouts, `--layouts random:N`; '
        '`harness policy adopt` folders, `harness demos` folders, LeRobot datasets of the '
        'harness) and write the next collection: the '
        'sampled layouts that failed first (at most a third of --budget), then the layouts '
        'whose objects stand farthest from every verified demonstration (farthest-point '
        'coverage, drawn from --pool-size seeds from --pool-base). The plan says why each '
        'layout is in it and the coverage before and after (the share of probe layouts with a '
        'demonstration within 3 cm, object by object). Collect it with `harness demos --plan '
        'PLAN --out DIR`.',
    )
    plan.add_argument('sources', nargs='+', metavar='SOURCE', help='folders to read')
    plan.add_argument('--budget', type=_positive_int, required=True, help='layouts to plan')
    plan.add_argument('--out', required=True, metavar='PLAN', help='the plan file (JSON) to write')
    plan.add_argument(
        '--tasks', nargs='+', metavar='TASK', help='tasks to plan (default: those the sources hold)'
    )
    plan.add_argument(
        '--pool-base',
        type=_seed,
        default=POOL_BASE,
        help=f'the first seed coverage may draw (default {POOL_BASE})',
    )
    plan.add_argument(
        '--pool-size',
        type=_positive_int_at_most(MAX_POOL_SIZE),
        default=POOL_SIZE,
        help=f'seeds coverage may draw, per task (default {POOL_SIZE}, at most {MAX_POOL_SIZE})',
    )
    plan.set_defaults(func=run_plan)


def station_placements():
    """(task, seed) -> where the layout's objects stand (x, y), from the task's sampler with
    the station's kinematics and head camera, as a reset places them; cached."""
    import numpy as np
    from arx_x5_description.embodiment import load_embodiment
    from harness_bench.layout import SAMPLED
    from harness_bench.tasks import TASKS
    from harness_worker.kinematics import StationKinematics
    from harness_worker.layout_feasibility import StationFeasibility

    from arx_x5_description.urdf import station_urdf

    emb = load_embodiment()
    feasibility = StationFeasibility(StationKinematics(station_urdf(), emb), emb)
    cache: dict[tuple[str, int], np.ndarray] = {}

    def placements(task: str, seed: int) -> np.ndarray:
        if (task, seed) not in cache:
            objects = TASKS[task]().scene(SAMPLED, seed, feasibility)
            cache[task, seed] = np.array([o.position[:2] for o in objects], dtype=float)
        return cache[task, seed]

    return placements


def _inside(path: Path, folder: Path) -> bool:
    """`path` (resolved, links followed) is `folder` or within it."""
    return path.resolve().is_relative_to(folder.resolve())


def run_plan(args: argparse.Namespace) -> int:
    from harness_bench.tasks import TASKS
    from harness_learning.collection_plan import PlanError, plan_collection, read_sources
    from harness_types.whole_file import write_whole

    out = Path(args.out)
    if out.is_dir():
        return _fail(f'--out {out} is a folder: name the plan file')
    within = next((s for s in args.sources if _inside(out, Path(s))), None)
    if within is not None:  # (it replaced a summary.json or bench.json it had just read)
        return _fail(f'--out {out} is inside the source {within}: write the plan elsewhere')
    if why := seeds_past_int64('--pool-base', args.pool_base, args.pool_size):  # (demos' seeds)
        return _fail(why)
    try:
        recorded = read_sources([Path(s) for s in args.sources])
    except PlanError as exc:
        return _fail(str(exc))
    if recorded.unreadable:
        _say(
            f'left out {len(recorded.unreadable)} summary.json that cannot be read (the '
            f'first: {recorded.unreadable[0]})'
        )
    held = {t for t, _ in recorded.tried | recorded.demonstrations}
    tasks = args.tasks or sorted(held)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown and args.tasks:
        return _fail(f'no task {", ".join(unknown)}; tasks: {", ".join(TASKS)}')
    if unknown:  # (named by the sources' summaries and datasets, not by the user)
        return _fail(
            f'the sources hold episodes of {", ".join(map(repr, unknown))}, which this workspace '
            f'has no task of: name the tasks to plan with --tasks ({", ".join(TASKS)})'
        )
    _say(
        f'{len(recorded.demonstrations)} verified demonstrations, {len(recorded.failed)} failed '
        f'sampled layouts in {len(args.sources)} sources; planning {args.budget} layouts of '
        f'{", ".join(tasks)}'
    )
    pool = list(range(args.pool_base, args.pool_base + args.pool_size))
    try:
        plan = plan_collection(
            recorded,
            tasks,
            args.budget,
            station_placements(),
            pool,
            sources=[str(Path(s).resolve()) for s in args.sources],
        )
    except PlanError as exc:
        return _fail(str(exc))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        write_whole(out, (json.dumps(plan.to_json(), indent=2) + '\n').encode())
    except OSError as exc:
        return _fail(f'--out {out}: {exc.strerror or exc}')
    failed = sum(p.why.startswith('failed') for p in plan.layouts)
    _say(
        f'{len(plan.layouts)} layouts ({failed} that failed, {len(plan.layouts) - failed} for '
        f'coverage) in {out}'
    )
    if len(plan.layouts) < args.budget:  # (the pool ran out: each seed is planned once)
        _say(
            f'fewer than --budget {args.budget}: the --pool-size {args.pool_size} seeds from '
            f'--pool-base {args.pool_base} held no other layout of {", ".join(tasks)} that is '
            'not demonstrated or tried already (a larger --pool-size draws more)'
        )
    for task in tasks:
        _say(
            f'{task}: coverage {plan.coverage_before[task]:.0%} now, '
            f'{plan.coverage_after[task]:.0%} once the plan is collected and verified'
        )
    return 0
