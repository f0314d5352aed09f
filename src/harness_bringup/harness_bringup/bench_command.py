"""`harness bench`: episodes of many tasks and layouts in parallel, summed up in tables."""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from pathlib import Path

from harness_types.config import RECORDINGS

from harness_bringup.arguments import (
    DEFAULT_POLICIES,
    INTERFACE_HELP,
    MAX_SAMPLED_LAYOUTS,
    PERCEPTION_HELP,
    POLICIES_HELP,
    RANDOMIZE_HELP,
    RECORDING_HELP,
    _interfaces,
    _layouts,
    _perception,
    _positive_int,
    _randomize,
    _seed,
    _strategies,
    seeds_past_int64,
)
from harness_bringup.console import fail as _fail
from harness_bringup.console import say as _say
from harness_bringup.settings import _config_path, _load, _with_policies

DEFAULT_LAYOUTS = (3, False)  # --layouts: the first 3 fixed layouts of each task


def add_parser(sub) -> None:
    bench = sub.add_parser(
        'bench',
        help='run the task suite and write result tables',
        description='Run episodes of every task (or --tasks) on its first --layouts layouts, '
        'in parallel where the machine allows (--jobs warm stations, each in its own ROS domain '
        'and serving episode after episode with a fresh program process each; a station that '
        'fails is replaced and its episode run again), then write per-task and overall '
        'tables (success rate, score, model calls, decisions by reason, tokens, cost, env '
        'steps; wall time separately) under --out: bench.md, bench.json and bench.html, and the '
        "verifier's and the outcome model's report cards (report_card.md/json). Ctrl-C ends the "
        'running episodes (their run folders are written), starts no other, and writes the '
        'tables of what ran (the interrupted episodes count as not run; none when it comes '
        'during --expert-check). A model server that does not answer is found before the '
        'first episode (exit 2); a set-up problem every episode would meet (a refused key, no '
        'such model) stops the bench at the first that meets it: the tables of what ran, '
        'exit 2.',
    )
    bench.add_argument('--tasks', nargs='+', metavar='TASK', help='tasks to run (default: all)')
    bench.add_argument(
        '--layouts',
        type=_layouts,
        metavar='N|random:N',
        help='layouts per task: N runs the first N fixed layouts (default 3), random:N runs N '
        f'(at most {MAX_SAMPLED_LAYOUTS:,}) layouts sampled from seeds --seed-base, '
        '--seed-base + 1, ... (every one feasible: the task checks reach and view before it '
        'accepts a sample)',
    )
    bench.add_argument('--seed', type=_seed, help='seed of every fixed-layout episode (default 0)')
    bench.add_argument(
        '--seed-base', type=_seed, help='the first seed of the random:N layouts (default 0)'
    )
    bench.add_argument(
        '--randomize', type=_randomize, default=(), metavar='AXES', help=RANDOMIZE_HELP
    )
    bench.add_argument(
        '--each-axis',
        action='store_true',
        help='with --randomize: run every layout once per axis, that axis alone (the table by '
        'axis then compares them); without it every episode has all the axes at once',
    )
    bench.add_argument(
        '--expert-check',
        action='store_true',
        help='with --layouts random:N: keep a sampled layout only when the reference program '
        'solves it (RoboTwin 2.0), trying further seeds (at most 3N per task); the tables say '
        'how many seeds each task dropped and why',
    )
    bench.add_argument('--model', help='scripted or a Claude model name (default: driver.model)')
    bench.add_argument('--out', default='runs', help='where the bench folder goes (default runs/)')
    bench.add_argument(
        '--jobs',
        type=_positive_int,
        help='episodes at a time (default: warm stations, one per core as memory allows, 2 GB '
        'each; a graph per episode or Ray, one per two cores)',
    )
    bench.add_argument('--perception', type=_perception, help=PERCEPTION_HELP)
    bench.add_argument('--recording', choices=RECORDINGS, help=RECORDING_HELP)
    bench.add_argument(
        '--interface',
        type=_interfaces,
        metavar='RUNG[,RUNG...]',
        help=INTERFACE_HELP + '; several (e.g. programs,skills) run every episode on each and '
        'add the ladder table',
    )
    bench.add_argument(
        '--policies', nargs='?', const=DEFAULT_POLICIES, metavar='FILE', help=POLICIES_HELP
    )
    bench.add_argument(
        '--strategies',
        type=_strategies,
        metavar='WAY[,WAY...]',
        help='with --policies: run every episode each way (A: the policy alone, B: the '
        "programs alone, C: policy then programs, rule: the agent's choice) and add the "
        'division-of-labour table, e.g. A,B,rule',
    )
    bench.add_argument(
        '--ray',
        nargs='?',
        const='auto',
        metavar='ADDRESS',
        help='run each episode as a Ray task on the cluster at ADDRESS (default auto: the one '
        '`ray start` runs here); --jobs episodes in flight; every node needs this workspace at '
        'the same path (Ray is an optional extra: pip install -r requirements-ray.txt)',
    )
    bench.add_argument(
        '--station',
        choices=('warm', 'cold'),
        default='warm',
        help='warm (default): each of the --jobs episodes at a time runs on a station that '
        'serves episode after episode (one graph, a fresh program process each); cold: every '
        'episode starts and stops a graph of its own, as `harness run` does',
    )
    bench.add_argument(
        '--plan',
        metavar='PLAN',
        help='run the sampled layouts of a collection plan (`harness plan-collection`) instead '
        'of --tasks, --layouts, --seed and --seed-base (it names its tasks and seeds)',
    )
    bench.set_defaults(func=_bench)


def _tables_of(out: Path) -> str:
    """Where the tables of a bench that ended early are (none when it ended in its expert
    check)."""
    if not (out / 'bench.json').is_file():
        return ''
    return f'; the tables of what ran: {out / "bench.md"} and {out / "bench.json"}'


def _bench(args: argparse.Namespace) -> int:
    from harness_bench.layout import SAMPLED
    from harness_bench.randomization import axes_name
    from harness_bench.tasks import TASKS
    from harness_driver.models import ModelError
    from harness_types.config import ConfigError

    from harness_bringup.bench import (
        EXPERT_TRIES,
        BenchEpisode,
        BenchSetupError,
        default_jobs,
        expert_check,
        run_bench,
        run_episode_process,
    )
    from harness_bringup.run import (
        UsageError,
        claim_folder,
        folder_word,
        prepare,
        replays_source,
    )
    from harness_bringup.run_command import probe_models

    planned = None
    if getattr(args, 'plan', None):  # a collection plan's layouts, in its order
        from harness_learning.collection_plan import PlanError, read_plan

        try:
            planned = read_plan(Path(args.plan))
        except PlanError as exc:
            return _fail(str(exc))
        if args.tasks:
            return _fail('--plan names its tasks: leave out --tasks')
        # (their defaults are None until here: argparse takes --lay for --layouts)
        given = [
            flag
            for flag, value in (
                ('--layouts', args.layouts),
                ('--seed', args.seed),
                ('--seed-base', args.seed_base),
            )
            if value is not None
        ]
        if given:
            return _fail(f'--plan names its layouts and seeds: leave out {", ".join(given)}')
        args.tasks = list(dict.fromkeys(t for t, _ in planned))
        unknown = [t for t in args.tasks if t not in TASKS]
        if unknown:
            return _fail(f'plan {args.plan}: no task {", ".join(unknown)}')
        args.layouts = (1, True)
    args.layouts = args.layouts or DEFAULT_LAYOUTS
    if not args.plan:  # (a seed the layouts do not take would be dropped without a word)
        if args.layouts[1] and args.seed is not None:
            return _fail('--seed is the seed of fixed layouts: random:N takes --seed-base')
        if not args.layouts[1] and args.seed_base is not None:
            return _fail(
                '--seed-base is the first seed of random:N layouts: fixed ones take --seed'
            )
    args.seed = 0 if args.seed is None else args.seed
    args.seed_base = 0 if args.seed_base is None else args.seed_base
    tasks = args.tasks or list(TASKS)
    twice = sorted({t for t in tasks if tasks.count(t) > 1})
    if twice:  # one folder per episode: the second would write over the first
        return _fail(f'--tasks names {", ".join(twice)} more than once')
    count, sampled = args.layouts
    rungs = args.interface or ('',)  # '': the configuration's
    try:
        config_file = _config_path(args)
        config = _load(args, model=args.model)
        for task in tasks:  # every check that needs no graph, before the first episode
            for rung in rungs:
                on_rung = _load(args, model=args.model, interface=rung or None)
                if replays_source(on_rung.driver.model, on_rung.driver.interface):
                    # checked as the episode it replays
                    if not rung:
                        raise UsageError(
                            'the scripted actions rung runs in a bench when named: '
                            '--interface actions'
                        )
                    on_rung = _load(args, model=args.model, interface='programs')
                prepared = prepare(on_rung, task, SAMPLED if sampled else 0, args.seed)
            if not sampled and count > TASKS[task].layouts:
                raise UsageError(
                    f'{task} has {TASKS[task].layouts} fixed layouts, fewer than --layouts '
                    f'{count} (random:{count} samples layouts)'
                )
        # the model's server (and the verifier's) answers, before the first episode: else
        # each would end not run, one after another
        probe_models(prepared)
    except (FileNotFoundError, ConfigError, UsageError, ModelError) as exc:
        return _fail(str(exc))
    tries = count * EXPERT_TRIES if args.expert_check else count
    if sampled and (why := seeds_past_int64('--seed-base', args.seed_base, tries)):
        return _fail(why)
    if args.expert_check and not (sampled and planned is None):
        return _fail('--expert-check checks sampled layouts: use it with --layouts random:N')
    if args.each_axis and not args.randomize:
        return _fail('--each-axis runs the --randomize axes one at a time: name them')
    groups = [(a,) for a in args.randomize] if args.each_axis else [args.randomize]
    if planned is not None:
        layouts = [(task, SAMPLED, seed) for task, seed in planned]
        what = f'the {len(planned)} sampled layouts of plan {args.plan}'
    elif sampled:
        seeds = range(args.seed_base, args.seed_base + count)
        layouts = [(task, SAMPLED, seed) for task in tasks for seed in seeds]
        what = f'{count} random layouts, seeds {args.seed_base}..{args.seed_base + count - 1}'
    else:
        layouts = [(task, layout, args.seed) for task in tasks for layout in range(count)]
        what = f'{count} layouts'
    ways = [('' if w == 'rule' else w) for w in (args.strategies or ('rule',))]
    if args.strategies and not config.kernel.policies:
        return _fail('--strategies needs policies (--policies)')
    if args.randomize:
        what += ', randomised: ' + (
            ', '.join(args.randomize) + ' one at a time'
            if args.each_axis
            else axes_name(args.randomize)
        )

    def episodes_of(layouts, among=groups) -> list[BenchEpisode]:
        return [
            BenchEpisode(task, layout, seed, rung, way, group)
            for group in among
            for task, layout, seed in layouts
            for rung in rungs
            for way in ways
        ]

    episodes = episodes_of(layouts)
    if len(rungs) > 1:
        what += f' x the interfaces {", ".join(rungs)}'
    jobs = args.jobs or default_jobs(not args.ray and getattr(args, 'station', 'warm') == 'warm')
    model = config.driver.model
    out = claim_folder(
        Path(args.out) / f'{time.strftime("%Y%m%d-%H%M%S")}-bench-{folder_word(model)}'
    )
    _say(
        f'{len(episodes)} episodes ({len(tasks)} tasks x {what}), model '
        f'{model}, {jobs} at a time; '
        + (
            'each in its own process and ROS domain'
            if args.ray or getattr(args, 'station', 'warm') == 'cold'
            else f'on {jobs} warm station{"s" if jobs > 1 else ""}, each its own ROS domain'
        )
    )
    extra = ['--perception', args.perception] if args.perception else []
    if getattr(args, 'recording', None):
        extra += ['--recording', args.recording]
    if config.kernel.policies:
        extra += ['--policies', config.kernel.policies]
    runner = run_episode_process
    stations = None
    if args.ray:
        from harness_bringup.bench_ray import RayUnavailableError, ray_runner

        try:
            runner = ray_runner(args.ray)
        except RayUnavailableError as exc:
            out.rmdir()  # (claimed above, and empty)
            return _fail(str(exc))
        _say(f'each episode a Ray task on the cluster at {args.ray}')
    elif getattr(args, 'station', 'warm') == 'warm':
        from harness_bringup.station_runner import StationRunner

        runner = stations = StationRunner(out / 'stations')
    tables = {}

    def bench() -> int:
        from harness_bringup.policy_broker import BROKERED

        # the episodes use this bench's servers and start none
        env = {**os.environ, BROKERED: '1'} if config.kernel.policies else None
        if args.ray and env is None:
            env = dict(os.environ)  # the nodes run this workspace at the same path
        chosen, checked, done = episodes, {}, {}
        if args.expert_check:
            chosen = []
            looks = ['--perception', args.perception] if args.perception else []
            if getattr(args, 'recording', None):
                looks += ['--recording', args.recording]
            for group in groups:
                check = expert_check(
                    tasks, count, args.seed_base, group, out / 'expert', config_file, jobs,
                    lambda m: _say(m), looks, env, runner,
                )  # fmt: skip
                for task, row in check.table().items():
                    checked[task if len(groups) == 1 else f'{task} ({axes_name(group)})'] = row
                kept = [(t, SAMPLED, seed) for t in tasks for seed in check.kept[t]]
                chosen += episodes_of(kept, [group])
                if model == 'scripted' and rungs == ('',) and ways == [''] and extra == looks:
                    done.update(check.runs)  # the reference's runs are this bench's episodes
        tables.update(
            run_bench(
                chosen,
                model,
                out,
                config_file,
                jobs,
                lambda m: _say(m),
                extra,
                env,
                runner,
                checked,
                done,
            )  # fmt: skip
        )
        return 0

    try:
        status = _with_policies(config, bench, out, tasks=tasks)
    except KeyboardInterrupt:
        _say(f'bench interrupted; the episodes that ran are under {out}{_tables_of(out)}')
        return 130
    except BenchSetupError as exc:  # every episode would meet it: said in one line, as run says it
        return _fail(
            f'{exc.detail} (the bench stopped: the episodes that ran are under {out}'
            f'{_tables_of(out)})'
        )
    except OSError as exc:  # a full disk, the folder taken away: what was written stays
        return _fail(
            f'the bench stopped: {exc.strerror or exc}'
            f'{f" ({exc.filename})" if exc.filename else ""}; the episodes that ran are under '
            f'{out}'
        )
    finally:
        if stations is not None:
            stations.close()
    if status:
        with contextlib.suppress(OSError):  # a bench that did not start leaves no folder
            out.rmdir()
        return status
    from harness_recording.bench_table import markdown

    print(markdown(tables))
    _say(f'tables: {out / "bench.md"}, {out / "bench.json"} and {out / "bench.html"}')
    return 0
