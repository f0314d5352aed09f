"""`harness run TASK`: one episode, a model writing programs until the task ends."""

from __future__ import annotations

import argparse
import os
import signal
import time
from pathlib import Path

from harness_types.config import INTERFACES, RECORDINGS

from harness_bringup.arguments import (
    ATTACH_HELP,
    DEFAULT_POLICIES,
    INTERFACE_HELP,
    PERCEPTION_HELP,
    POLICIES_HELP,
    RANDOMIZE_HELP,
    RECORDING_HELP,
    STRATEGY_HELP,
    _non_negative,
    _perception,
    _port,
    _positive_float,
    _positive_int,
    _randomize,
    _task_arguments,
)
from harness_bringup.console import fail as _fail
from harness_bringup.console import say as _say
from harness_bringup.settings import _attachable, _load, _not_started, _outcome_line, _with_policies


def add_parser(sub) -> None:
    run = sub.add_parser(
        'run',
        help='run one episode: the model writes programs until the task is finished',
        description='Start the node graph (worker, skill server, a kernel per episode, the '
        'driver), reset TASK and let the model write programs at each decision point until it '
        'finishes or a budget ends the episode. `--model scripted` is a baseline that answers '
        "with the task's reference program and needs no key; any other name is a Claude model "
        'reached through ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL if set). Writes a run folder '
        '(summary.json, events.jsonl, kernel.log, images/, ticks/, bag/ a rosbag2). Exits 0 when '
        'the episode ended, whatever its success; 1 on an error; 2 on bad input or an unreachable '
        'model; 130 when interrupted (Ctrl-C: the run folder is still written whole).',
    )
    _task_arguments(run, 'lift_cube')
    run.add_argument(
        '--randomize', type=_randomize, default=(), metavar='AXES', help=RANDOMIZE_HELP
    )
    run.add_argument('--model', help='scripted or a Claude model name (default: driver.model)')
    run.add_argument('--out', default='runs', help='where run folders go (default runs/)')
    run.add_argument(
        '--max-model-calls', type=_positive_int, help='override driver.max_model_calls'
    )
    run.add_argument(
        '--max-cost-usd', type=_non_negative, help='override driver.max_cost_usd (0 = none)'
    )
    run.add_argument(
        '--max-wall-seconds', type=_positive_float, help='override driver.max_wall_seconds'
    )
    run.add_argument('--attach', action='store_true', help=ATTACH_HELP)
    run.add_argument('--perception', type=_perception, help=PERCEPTION_HELP)
    run.add_argument('--recording', choices=RECORDINGS, help=RECORDING_HELP)
    run.add_argument('--interface', choices=INTERFACES, help=INTERFACE_HELP)
    run.add_argument('--strategy', choices=('A', 'B', 'C'), help=STRATEGY_HELP)
    run.add_argument(
        '--actions-from',
        metavar='RUN',
        help='with --model scripted --interface actions: the run folder of a programs-rung '
        'episode of the same task, layout and seed whose motions the baseline replays, one '
        'action per reply (default: run the reference program first, its run folder beside)',
    )
    run.add_argument(
        '--policies', nargs='?', const=DEFAULT_POLICIES, metavar='FILE', help=POLICIES_HELP
    )
    run.add_argument(
        '--foxglove',
        type=_port,
        nargs='?',
        const=8765,
        metavar='PORT',
        help="serve the episode's topics live over the Foxglove WebSocket protocol on "
        'localhost:PORT (default 8765; 0 = any free port); open it in Foxglove with '
        '"Open connection" (layout: docs/foxglove_layout.json)',
    )
    run.set_defaults(func=_run)


def _source_first(config, args: argparse.Namespace) -> bool:
    """The scripted actions rung with no --actions-from: its programs-rung source runs first."""
    from harness_bringup.run import replays_source

    return replays_source(config.driver.model, config.driver.interface) and not args.actions_from


def prepare_run(args: argparse.Namespace, supervised: bool):
    """`harness run`'s inputs checked and made ready: (config, prepared, base), `base` the
    summary fields known before the episode runs. `supervised`: the episode process (or a warm
    station's episode), whose supervisor runs the actions rung's source. FileNotFoundError,
    ConfigError or UsageError when something is wrong."""
    from harness_bench.randomization import axes_name
    from harness_types.config import with_overrides

    from harness_bringup.run import UsageError, prepare

    if args.attach:
        _attachable()
    config = _load(
        args,
        model=args.model,
        max_model_calls=args.max_model_calls,
        max_cost_usd=args.max_cost_usd,
        max_wall_seconds=args.max_wall_seconds,
        interface=args.interface,
        strategy=args.strategy,
        recording=args.recording,
    )
    if args.strategy and not config.kernel.policies:  # (it would be recorded, and do nothing)
        raise UsageError('--strategy needs policies (--policies)')
    actions_from = Path(args.actions_from) if args.actions_from else None
    source_first = _source_first(config, args)
    if source_first and supervised:  # its supervisor runs the source and names it
        raise UsageError('a supervised episode of the scripted actions rung needs --actions-from')
    checked = with_overrides(config, 'driver', interface='programs') if source_first else config
    prepared = prepare(
        checked,
        args.task,
        args.layout,
        args.seed,
        _say,
        actions_from,
        args.randomize,
        attached=args.attach,
    )
    base = {
        'task': args.task,
        'layout': args.layout,
        'seed': args.seed,
        'randomize': axes_name(args.randomize),
        'model': config.driver.model,
        'baseline': config.driver.model == 'scripted',
    }
    return config, prepared, base


def probe_models(prepared) -> None:
    """ModelError when the model's (or verifier's) service does not answer: found before the
    graph starts, not 7 s later."""
    for client in {prepared.model, prepared.verifier} - {None}:
        getattr(client, 'probe', lambda: None)()


def episode_exit_code(result, folder: Path) -> int:
    """Say how the episode ended; the command's exit code."""
    s = result.summary
    if s.get('outcome'):
        _say(_outcome_line(**s['outcome']))
    decisions = ', '.join(f'{k} {v}' for k, v in (s.get('decisions') or {}).items() if v)
    _say(
        f'episode {s["status"]}'
        + (f': {s["detail"]}' if s.get('detail') else '')
        + f'; {s.get("model_calls", 0)} model calls ({decisions or "none"}'
        + (
            f'; {s["model_requests_unanswered"]} of them asked, not answered'
            if s.get('model_requests_unanswered')
            else ''
        )
        + (
            f'; {s["verifier_requests_unanswered"]} verifier requests not answered'
            if s.get('verifier_requests_unanswered')
            else ''
        )
        + f'), {s.get("env_steps") or 0} env steps, {s.get("wall_seconds", 0)} s'
    )
    _say(f'run folder: {folder}')
    if result.setup_error:
        return _fail(s['detail'])
    if s['status'] == 'interrupted':
        return 130
    return 1 if s['status'] in ('error', 'model_service_failed', 'policy_service_failed') else 0


def _run(args: argparse.Namespace) -> int:
    from harness_bench.layout import layout_name
    from harness_driver.models import ModelError
    from harness_types.config import ConfigError

    from harness_bringup.run import (
        GraphOptions,
        UsageError,
        run_episode,
        run_folder_path,
    )
    from harness_bringup.supervisor import SUPERVISED_FOLDER, supervised

    child_folder = os.environ.get(SUPERVISED_FOLDER)
    if child_folder:
        # Its supervisor says "interrupt" with SIGINT: heard also where SIGINT was ignored when
        # the command started (a background job of a script passes that on).
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        config, prepared, base = prepare_run(args, bool(child_folder))
    except (FileNotFoundError, ConfigError, UsageError) as exc:
        return _fail(str(exc))
    model = config.driver.model
    source_first = _source_first(config, args)
    folder = (
        Path(child_folder)
        if child_folder
        else run_folder_path(Path(args.out), args.task, args.layout, args.seed, model)
    )
    try:
        probe_models(prepared)
    except ModelError as exc:
        return _not_started(folder, base, str(exc), 'model_service_failed')
    label = ' (scripted baseline: reference programs, no model)' if model == 'scripted' else ''
    if not child_folder:
        _say(
            f'{args.task} layout {layout_name(args.layout)} seed {args.seed}, '
            f'model {model}{label}; '
            + (
                'joining the station in ROS domain '
                f'{os.environ.get("ROS_DOMAIN_ID") or 0}, starting the kernel'
                if args.attach
                else 'starting worker, skill server and kernel'
            )
        )

    def episode() -> int:
        options = GraphOptions(attach=args.attach, foxglove_port=args.foxglove)
        return episode_exit_code(run_episode(prepared, folder, _say, options), folder)

    if child_folder:  # the supervised episode itself
        try:
            code = episode()
        except KeyboardInterrupt:
            code = 130
        # The run folder is complete and closed, the graph left in order: no teardown.
        from harness_types.process import leave

        leave(code)
    argv = args.argv

    def source_then_replay() -> int:
        # The scripted actions rung replays the reference program's motions: that program's
        # episode (same task, layout and seed) runs first, its run folder beside the replay's.
        from harness_driver.actions_baseline import SourceRunError, check_source

        source = folder
        _say(f'the scripted actions rung replays the reference program, which runs first: {source}')
        code = supervised(source, base, [*argv, '--interface', 'programs'])
        if code == 130:
            return code
        try:
            check_source(source, args.task, args.layout, args.seed, args.randomize)
        except SourceRunError as exc:
            _say(f'nothing to replay: {exc}')
            return code or 1
        replay = run_folder_path(Path(args.out), args.task, args.layout, args.seed, model)
        _say(f'now its motions, one action per reply ({replay})')
        return supervised(replay, base, [*argv, '--actions-from', str(source)], since=time.time())

    def interrupted_starting() -> int:  # (the run folder holds the servers' logs by now)
        _not_started(folder, base, 'interrupted while the policy servers started', 'interrupted')
        return 130

    try:
        work = source_then_replay if source_first else lambda: supervised(folder, base, argv)
        code = _with_policies(
            config,
            work,
            folder,
            lambda problem: _not_started(folder, base, problem, 'policy_service_failed'),
            [args.task],
            interrupted_starting,
        )
    except KeyboardInterrupt:  # between two supervised episodes, whose run folders are whole
        code = 130
    if code == 130:
        # Interrupted, and the run folder closed: this process only exits now. Ignored, a
        # Ctrl-C pressed meanwhile cannot turn 130 into a death by SIGINT (Python's own
        # handlers are gone while the interpreter shuts down).
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)
    return code
