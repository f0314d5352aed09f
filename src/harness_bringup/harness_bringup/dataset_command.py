"""`harness export` and `harness demos`: run folders as a LeRobot dataset, and demonstrations
collected as one."""

from __future__ import annotations

import argparse
import json
import os
import shutil
from collections import Counter
from pathlib import Path

from harness_bringup.arguments import (
    MAX_SAMPLED_LAYOUTS,
    RANDOMIZE_HELP,
    _image_size,
    _layouts,
    _positive_int,
    _randomize,
    _seed,
)
from harness_bringup.bench_command import _bench
from harness_bringup.console import fail as _fail
from harness_bringup.console import say as _say
from harness_bringup.settings import _config_path


def add_parser(sub) -> None:
    export = sub.add_parser(
        'export',
        help='convert run folders to a LeRobot v3 dataset',
        description='Write the trials of RUN folders (episodes of harness run, bench and mcp; '
        'a harness program run records no ticks) as a LeRobot v3.0 dataset at DIR: parquet '
        'frames of state and action at the control rate, MP4 videos of each camera recorded '
        'at every tick (worker.compressed_every_ticks: 1; a camera recorded less often is '
        'left out and counted in meta/info.json), meta/ with tasks, episodes (layout, executor, '
        'verdict, evidence, tier) and stats; DIR/demos holds the trials a tier 1-2 verifier '
        'judged satisfied.',
    )
    export.add_argument('runs', nargs='+', metavar='RUN', help='run folders')
    export.add_argument('--lerobot', required=True, metavar='DIR', help='the dataset to write')
    export.set_defaults(func=_export)

    demos = sub.add_parser(
        'demos',
        help='collect demonstrations: reference programs on sampled layouts -> one dataset',
        description='Run the reference programs (the scripted agent) of TASKs on --layouts, '
        'in parallel as a bench does (its tables land in OUT/bench), with every camera recorded '
        'at every tick, then write the trials a tier-1 or tier-2 verifier satisfied as one '
        'LeRobot v3.0 dataset at OUT/dataset (OUT/dataset/collection.json says what it holds '
        'and which episodes gave no demonstration). Train on it with `harness policy train`.',
    )
    demos.add_argument('tasks', nargs='*', metavar='TASK', help='tasks to collect (or --plan)')
    demos.add_argument(
        '--plan',
        metavar='PLAN',
        help='collect the layouts of a plan (`harness plan-collection`) as it is (run in its '
        "order; the dataset's episodes come in the run folders' name order), instead of TASKs, "
        '--layouts and --seed-base (it names its tasks and seeds)',
    )
    demos.add_argument(
        '--include',
        nargs='+',
        metavar='DEMOS',
        help='earlier `harness demos` folders whose verified trials join this dataset (theirs '
        'first)',
    )
    demos.add_argument(
        '--layouts',
        type=_layouts,
        metavar='N|random:N',
        help='layouts per task (default random:10): random:N samples N (at most '
        f'{MAX_SAMPLED_LAYOUTS:,}) layouts from seeds --seed-base.., N the first N fixed ones',
    )
    demos.add_argument('--seed-base', type=_seed, help='the first sampled seed (default 1000)')
    demos.add_argument(
        '--randomize',
        type=_randomize,
        default=(),
        metavar='AXES',
        help='demonstrations in randomised scenes (domain randomisation): ' + RANDOMIZE_HELP,
    )
    demos.add_argument('--out', required=True, metavar='OUT', help='a new folder for it all')
    demos.add_argument(
        '--jobs', type=_positive_int, help='episodes at a time (default: as harness bench)'
    )
    demos.add_argument(
        '--image-size',
        type=_image_size,
        metavar='HxW',
        help="scale every camera to the policy's resolution, e.g. 96x128 (default: as rendered)",
    )
    demos.add_argument(
        '--ray', nargs='?', const='auto', metavar='ADDRESS', help='episodes as Ray tasks (as bench)'
    )
    demos.set_defaults(func=_demos)


def _export(args: argparse.Namespace) -> int:
    from harness_recording.lerobot import InterruptedAfterWritingError, export_runs
    from harness_recording.trial_data import ExportError

    runs = [Path(r) for r in args.runs]
    real = Counter(os.path.realpath(r) for r in runs)
    twice = sorted({str(r) for r in runs if real[os.path.realpath(r)] > 1})
    if twice:  # (its trials would be in the dataset twice)
        return _fail(f'{", ".join(twice)}: named more than once')
    try:
        summary = export_runs(runs, Path(args.lerobot), _say)
    except ExportError as exc:
        return _fail(str(exc))
    except InterruptedAfterWritingError:
        _say(f'interrupted once the dataset was written: {args.lerobot} is the new one')
        return 130
    except KeyboardInterrupt:  # (export_runs wrote beside: nothing half-made is left)
        _say(f'interrupted: {args.lerobot} is as it was')
        return 130
    _say(
        f'{summary["episodes"]} trials ({summary["frames"]} frames) in {args.lerobot}; '
        f'{summary["demos"]} satisfied by tier 1-2 in {Path(args.lerobot) / "demos"}'
    )
    return 0


DEMO_LAYOUTS = (10, True)  # the default --layouts of harness demos: random:10
DEMO_SEED_BASE = 1000  # the default --seed-base of harness demos


def _demos(args: argparse.Namespace) -> int:
    """The demonstration collector: the reference programs (the scripted agent) on sampled
    layouts as a bench whose cameras are recorded at every tick, then one LeRobot dataset of
    the trials a tier-1/2 verifier satisfied."""
    from dataclasses import replace

    from harness_bench.tasks import TASKS
    from harness_recording.lerobot import write_demos
    from harness_recording.trial_data import ExportError
    from harness_types.config import ConfigError, load_config

    if bool(args.tasks) == bool(args.plan):
        given = 'both' if args.tasks else 'neither'
        return _fail(
            f'name the TASKs to collect or a --plan (`harness plan-collection`): {given} given'
        )
    unknown = [t for t in args.tasks if t not in TASKS]
    if unknown:
        return _fail(f'no task {", ".join(unknown)}; tasks: {", ".join(TASKS)}')
    if args.layouts and not args.layouts[1] and args.seed_base is not None:
        return _fail(
            '--seed-base is the first seed of random:N layouts: fixed ones run with seed 0'
        )
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        return _fail(f'{out} exists and is not an empty folder: choose a new --out')
    included = [Path(p) for p in args.include or ()]
    for earlier in included:
        if not (earlier / 'bench').is_dir():
            return _fail(f'--include {earlier} is not a `harness demos` folder (no bench/ in it)')
    try:
        config = load_config(_config_path(args))
    except (FileNotFoundError, ConfigError) as exc:
        return _fail(str(exc))
    out.mkdir(parents=True, exist_ok=True)
    # Every tick's camera frame in the bag: a dataset holds a camera only at every frame.
    recorded = replace(config, worker=replace(config.worker, compressed_every_ticks=1))
    args.config = str(recorded.write(out / 'collection.yaml'))
    args.strategies = None
    args.each_axis = args.expert_check = False  # every demonstration the verifier satisfies is kept
    args.model, args.interface, args.perception, args.policies = 'scripted', None, None, None
    args.seed = None  # (the bench's fixed-layout seed: 0; a --plan names its own seeds)
    if not args.plan:  # (a --plan refuses the flags it would leave unused: unset until here)
        args.layouts = args.layouts or DEMO_LAYOUTS
        if args.layouts[1] and args.seed_base is None:
            args.seed_base = DEMO_SEED_BASE
    args.out = str(out / 'bench')
    args.tasks = args.tasks or None
    status = 1  # (also when the bench dies of an exception: the same folder may come again)
    try:
        status = _bench(args)
    finally:
        if status and not (out / 'bench').exists():  # refused before a bench ran: not kept
            (out / 'collection.yaml').unlink(missing_ok=True)
    if status:
        return status
    episodes = [  # the earlier collections' first, then this one's
        p.parent
        for folder in [*included, out]
        for p in sorted((folder / 'bench').glob('*/episodes/*/*/events.jsonl'))
    ]
    _say(f'writing the demonstrations of {len(episodes)} episodes to {out / "dataset"}')
    # Written beside, then renamed whole: a dataset cut short (a Ctrl-C, a full disk) would
    # read as whole to LeRobot and to training (its meta is rewritten after every episode).
    partial = out / '.dataset.partial'
    shutil.rmtree(partial, ignore_errors=True)
    try:
        summary = write_demos(episodes, partial, _say, args.image_size)
        if not summary['episodes']:
            return _fail(
                f'no episode gave a demonstration (the episodes are under {out / "bench"})'
            )
        (partial / 'collection.json').write_text(json.dumps(summary, indent=2) + '\n')
        partial.rename(out / 'dataset')
    except ExportError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        _say(f'interrupted while writing the dataset: none kept (the episodes: {out / "bench"})')
        return 130
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    _say(
        f'{summary["episodes"]} demonstrations ({summary["frames"]} frames; cameras: '
        f'{", ".join(summary["cameras"]) or "none"}) in {out / "dataset"}; '
        f'{len(summary["runs_without_demonstration"])} episodes gave none'
    )
    return 0
