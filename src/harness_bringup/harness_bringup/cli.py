"""The `harness` command.

harness run TASK [--layout N|random] [--seed S] [--model NAME] [--out DIR]  one episode, a model
harness bench [--tasks T ...] [--layouts N|random:N] [--model NAME] [--out DIR]  the task suite
harness program TASK FILE [--layout N|random] [--seed S] [--out DIR]       a program, no model
harness serve [--ros-args ...]                                        the worker alone
harness up [--policies FILE]                                          the local policy servers
harness policy serve NAME [--port P]                                  one policy server
harness smoke                                                         check the ROS set-up
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from dataclasses import asdict
from pathlib import Path

from harness_types.config import INT64_MAX, INTERFACES, PERCEPTION_BACKENDS, not_a_file

from harness_bringup import adopt_command, outcome_command, plan_command
from harness_bringup.console import fail as _fail
from harness_bringup.console import say as _say


def _attachable() -> None:
    """UsageError when ROS_DOMAIN_ID is no domain: said now, not once the graph fails to join
    it."""
    from harness_bringup.domain import attached_domain_id
    from harness_bringup.run import UsageError

    try:
        attached_domain_id()
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _not_started(folder: Path, base: dict, problem: str) -> int:
    """An episode that could not start (its model server or policy servers do not answer):
    its run folder still says why (events, summary, report), and the command fails in one
    line."""
    from harness_driver.run_folder import RunFolder

    from harness_bringup.run import write_report_safely

    run = RunFolder(folder)
    run.event({'type': 'end', 'status': 'error', 'detail': problem})
    run.summary({**base, 'status': 'error', 'detail': problem})
    run.close()
    write_report_safely(run.path, lambda _line: None)
    return _fail(problem)


def _config_path(args: argparse.Namespace) -> Path | None:
    """--config, else $HARNESS_CONFIG, else ./config/harness.yaml, else the workspace's."""
    from harness_types.config import config_file

    return config_file(args.config)


def _smoke(_args: argparse.Namespace) -> int:
    from harness_bringup.domain import claim_domain_id
    from harness_bringup.smoke import run_smoke

    claim = claim_domain_id()
    try:
        result = run_smoke(claim.domain_id)
    finally:
        claim.release()
    print(json.dumps({'ok': True, 'domain_id': claim.domain_id, **asdict(result)}))
    return 0


def _outcome_line(success: bool, score: float, detail: str) -> str:
    return f'outcome: {"SUCCESS" if success else "no success"} (score {score:.2f}): {detail}'


def _load(args: argparse.Namespace, **driver_overrides):
    """The configuration file with the command line's overrides (the driver's section, and
    --perception of the kernel's)."""
    from harness_types.config import load_config, with_overrides

    path = _config_path(args)
    config = with_overrides(load_config(path), 'driver', **driver_overrides)
    return with_overrides(
        config,
        'kernel',
        perception=getattr(args, 'perception', None),
        policies=_policies_path(args, path),
    )


def _policies_path(args: argparse.Namespace, config: Path | None) -> str | None:
    """--policies FILE, or the catalogue beside the config file for a bare --policies (None:
    the config's kernel.policies stands)."""
    given = getattr(args, 'policies', None)
    if given is None:
        return None
    if given == DEFAULT_POLICIES:
        folder = config.parent if config is not None else Path('config')
        given = str(folder / 'policies.yaml')
    if not Path(given).is_file():
        raise FileNotFoundError(f'policy catalogue {given} {not_a_file(Path(given))}')
    return str(Path(given).resolve())


def _broker(config, logs: Path | None = None):
    """The policy broker of the configured catalogue (None without policies); `logs`: where
    the servers it starts write their output (None: this process's)."""
    from harness_bringup.policy_broker import PolicyBroker
    from harness_bringup.policy_servers import SERVERS
    from harness_bringup.run import UsageError, policy_catalog

    catalog = policy_catalog(config)
    if catalog is None:
        return None
    for spec in catalog.policies.values():  # said now, not once its server failed to start
        if spec.serve and spec.serve not in SERVERS:
            raise UsageError(
                f'{catalog.path}: policy {spec.name} serves {spec.serve!r}, which `harness '
                f'policy serve` does not know; it knows: {", ".join(SERVERS)}'
            )
    return PolicyBroker(catalog, config.path, _say, logs)


def _run(args: argparse.Namespace) -> int:
    from harness_bench.layout import layout_name
    from harness_driver.models import ModelError
    from harness_types.config import ConfigError, with_overrides

    from harness_bringup.run import (
        GraphOptions,
        UsageError,
        prepare,
        replays_source,
        run_episode,
        run_folder_path,
    )
    from harness_bringup.supervisor import SUPERVISED_FOLDER, supervised

    child_folder = os.environ.get(SUPERVISED_FOLDER)
    try:
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
        )
        actions_from = Path(args.actions_from) if args.actions_from else None
        source_first = (
            replays_source(config.driver.model, config.driver.interface) and actions_from is None
        )
        if source_first and child_folder:  # its supervisor runs the source and names it
            raise UsageError(
                'a supervised episode of the scripted actions rung needs --actions-from'
            )
        checked = with_overrides(config, 'driver', interface='programs') if source_first else config
        prepared = prepare(checked, args.task, args.layout, args.seed, _say, actions_from)
    except (FileNotFoundError, ConfigError, UsageError) as exc:
        return _fail(str(exc))
    model = config.driver.model
    folder = (
        Path(child_folder)
        if child_folder
        else run_folder_path(Path(args.out), args.task, args.layout, args.seed, model)
    )
    base = {
        'task': args.task,
        'layout': args.layout,
        'seed': args.seed,
        'model': model,
        'baseline': model == 'scripted',
    }
    try:  # an unreachable model service is found before the graph starts, not 7 s later
        for client in {prepared.model, prepared.verifier} - {None}:
            getattr(client, 'probe', lambda: None)()
    except ModelError as exc:
        return _not_started(folder, base, str(exc))
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
        result = run_episode(prepared, folder, _say, options)
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
            + f'), {s.get("env_steps")} env steps, {s.get("wall_seconds", 0)} s'
        )
        _say(f'run folder: {folder}')
        if result.setup_error:
            return _fail(s['detail'])
        if s['status'] == 'interrupted':
            return 130
        return 1 if s['status'] in ('error', 'model_service_failed', 'policy_service_failed') else 0

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
            check_source(source, args.task, args.layout, args.seed)
        except SourceRunError as exc:
            _say(f'nothing to replay: {exc}')
            return code or 1
        replay = run_folder_path(Path(args.out), args.task, args.layout, args.seed, model)
        _say(f'now its motions, one action per reply ({replay})')
        return supervised(replay, base, [*argv, '--actions-from', str(source)], since=time.time())

    try:
        work = source_then_replay if source_first else lambda: supervised(folder, base, argv)
        code = _with_policies(
            config,
            work,
            folder,
            lambda problem: _not_started(folder, base, problem),
            [args.task],
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


def _with_policies(
    config, work, logs: Path | None = None, failed=_fail, tasks: list[str] | None = None
) -> int:
    """`work()` with the catalogue's local policy servers answering (started here when they
    do not, stopped after: those of policies that learned the kind of one of `tasks`);
    `failed(problem)` (default: one line, exit 2) when they cannot be. An episode of `harness
    bench` starts none: the bench's own broker owns them (BROKERED)."""
    from harness_bringup.policy_broker import BROKERED, BrokerError
    from harness_bringup.run import UsageError

    try:
        broker = _broker(config, logs)  # the catalogue is checked either way
    except UsageError as exc:
        return _fail(str(exc))
    if broker is None or os.environ.get(BROKERED):
        return work()
    kinds = None
    if tasks:
        from harness_bench.tasks import TASKS

        kinds = {TASKS[t].kind for t in tasks if t in TASKS}
    with broker:
        try:
            broker.ensure(kinds)
        except BrokerError as exc:
            return failed(str(exc))
        except KeyboardInterrupt:
            return 130
        return work()


def _bench(args: argparse.Namespace) -> int:
    from harness_bench.layout import SAMPLED
    from harness_bench.tasks import TASKS
    from harness_types.config import ConfigError

    from harness_bringup.bench import BenchEpisode, default_jobs, run_bench, run_episode_process
    from harness_bringup.run import UsageError, prepare, replays_source

    planned = None
    if getattr(args, 'plan', None):  # a collection plan's layouts, in its order
        from harness_learning.collection_plan import PlanError, read_plan

        try:
            planned = read_plan(Path(args.plan))
        except PlanError as exc:
            return _fail(str(exc))
        if args.tasks:
            return _fail('--plan names its tasks: leave out --tasks')
        args.tasks = list(dict.fromkeys(t for t, _ in planned))
        unknown = [t for t in args.tasks if t not in TASKS]
        if unknown:
            return _fail(f'plan {args.plan}: no task {", ".join(unknown)}')
        args.layouts = (1, True)
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
                prepare(on_rung, task, SAMPLED if sampled else 0, args.seed)
            if not sampled and count > TASKS[task].layouts:
                raise UsageError(
                    f'{task} has {TASKS[task].layouts} fixed layouts, fewer than --layouts '
                    f'{count} (random:{count} samples layouts)'
                )
    except (FileNotFoundError, ConfigError, UsageError) as exc:
        return _fail(str(exc))
    if sampled and args.seed_base + count - 1 > INT64_MAX:
        return _fail(f'--seed-base {args.seed_base} + {count} layouts passes {INT64_MAX}')
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
    episodes = [
        BenchEpisode(task, layout, seed, rung, way)
        for task, layout, seed in layouts
        for rung in rungs
        for way in ways
    ]
    if len(rungs) > 1:
        what += f' x the interfaces {", ".join(rungs)}'
    jobs = args.jobs or default_jobs()
    model = config.driver.model
    out = Path(args.out) / f'{time.strftime("%Y%m%d-%H%M%S")}-bench-{model}'
    _say(
        f'{len(episodes)} episodes ({len(tasks)} tasks x {what}), model '
        f'{model}, {jobs} at a time; each in its own process and ROS domain'
    )
    extra = ['--perception', args.perception] if args.perception else []
    if config.kernel.policies:
        extra += ['--policies', config.kernel.policies]
    runner = run_episode_process
    if args.ray:
        from harness_bringup.bench_ray import RayUnavailableError, ray_runner

        try:
            runner = ray_runner(args.ray)
        except RayUnavailableError as exc:
            return _fail(str(exc))
        _say(f'each episode a Ray task on the cluster at {args.ray}')
    tables = {}

    def bench() -> int:
        from harness_bringup.policy_broker import BROKERED

        # the episodes use this bench's servers and start none
        env = {**os.environ, BROKERED: '1'} if config.kernel.policies else None
        if args.ray and env is None:
            env = dict(os.environ)  # the nodes run this workspace at the same path
        tables.update(
            run_bench(
                episodes, model, out, config_file, jobs, lambda m: _say(m), extra, env, runner
            )
        )
        return 0

    try:
        status = _with_policies(config, bench, out, tasks=tasks)
    except KeyboardInterrupt:
        _say(f'bench interrupted; the episodes that ran are under {out / "episodes"}')
        return 130
    if status:
        return status
    from harness_driver.bench_table import markdown

    print(markdown(tables))
    _say(f'tables: {out / "bench.md"}, {out / "bench.json"} and {out / "bench.html"}')
    return 0


def _program(args: argparse.Namespace) -> int:
    from harness_bench.layout import layout_name
    from harness_driver.models import INSTRUCTION
    from harness_types.config import ConfigError

    from harness_bringup.run import (
        UsageError,
        check_station_settings,
        check_task,
        run_folder_path,
        write_report_safely,
    )

    try:
        check_task(args.task, args.layout)
    except UsageError as exc:
        return _fail(str(exc))
    program = Path(args.file)
    if not program.is_file():
        return _fail(f'program file {program} {not_a_file(program)}')
    try:
        config = _load(args)
        check_station_settings(config)
        if args.attach:
            _attachable()
    except (FileNotFoundError, ConfigError, UsageError) as exc:
        return _fail(str(exc))
    try:
        code = program.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        return _fail(f'program file {program} cannot be read: {exc}')
    try:
        compile(code, str(program), 'exec')
    except SyntaxError as exc:
        return _fail(f'{program}:{exc.lineno}: {exc.msg}')

    from harness_driver.driver_node import GraphError
    from harness_driver.episode import cell_record
    from harness_driver.run_folder import RunFolder

    from harness_bringup.episode_graph import EpisodeGraph

    def episode() -> int:
        run = RunFolder(
            run_folder_path(Path(args.out), args.task, args.layout, args.seed, 'program')
        )
        params = config.write(run.path / 'params.yaml')
        summary = {
            'task': args.task,
            'layout': args.layout,
            'seed': args.seed,
            'agent': 'a program file, no model',
            'program': str(program),
            'status': 'error',
        }
        started = time.monotonic()
        try:
            _say(
                f'starting the graph (worker, skill server, kernel) for {args.task} '
                f'layout {layout_name(args.layout)}'
            )
            with EpisodeGraph(params, attach=args.attach) as graph:
                start = graph.reset(args.task, args.layout, args.seed)
                _say(f'instruction: {start.instruction}')
                graph.start_kernel(run.workspace, run.kernel_log)
                _say(f'running {program}')
                # A program may read the episode's instruction (a task whose instruction
                # changes with the layout), as the scripted baseline's reference programs do;
                # set in a cell of its own, so that tracebacks give the file's line numbers.
                wait = config.kernel.cell_timeout_seconds + 60.0
                graph.run_cell(f'{INSTRUCTION} = {start.instruction!r}', wait)
                cell = graph.run_cell(code, wait)
                run.event(cell_record(cell, 1, code))
                if cell.output:
                    print(cell.output.rstrip())
                if cell.traceback:
                    print(cell.traceback.rstrip())
                if cell.stopped_by is not None:
                    _say(f'stopped by {cell.stopped_by.event}: {cell.stopped_by.detail}')
                _say(f'cell {cell.status}: {len(cell.executions)} executions')
                graph.stop_kernel()
                outcome = graph.outcome()
                summary.update(
                    status=cell.status,
                    env_steps=graph.robot().step,
                    outcome=asdict(outcome),
                    strategy={
                        'policies': bool(config.kernel.policies),
                        'choice': cell.strategy or None,
                        'kind': cell.strategy_kind or None,
                    },
                )
                _say(_outcome_line(outcome.success, outcome.score, outcome.detail))
        except (GraphError, TimeoutError) as exc:
            summary['detail'] = str(exc)
            print(f'[harness] error: {exc}', file=sys.stderr)
            return 1
        finally:
            summary['wall_seconds'] = round(time.monotonic() - started, 2)
            run.summary(summary)
            run.close()
            write_report_safely(run.path, _say)
            _say(f'run folder: {run.path}')
        return 0

    return _with_policies(config, episode, tasks=[args.task])


def _serve(args: argparse.Namespace) -> int:
    from harness_types.config import ConfigError

    from harness_bringup.run import UsageError, check_station_settings
    from harness_bringup.serve import serve

    try:
        config = _load(args)
        check_station_settings(config)
    except (FileNotFoundError, ConfigError, UsageError) as exc:
        return _fail(str(exc))
    return serve(config, args.ros_args, _say)


def _mcp(args: argparse.Namespace) -> int:
    from harness_types.config import ConfigError

    from harness_bringup.mcp import McpOptions, protocol_stdout, serve_mcp
    from harness_bringup.run import UsageError, check_station_settings

    # Standard output is the protocol's: until the server takes it, everything this process and
    # its children (policy servers) print goes to standard error.
    with protocol_stdout() as serving:
        try:
            config = _load(args)
            check_station_settings(config)
        except (FileNotFoundError, ConfigError, UsageError) as exc:
            return _fail(str(exc))
        options = McpOptions(
            args.task,
            args.layout,
            args.seed,
            Path(args.out),
            Path(args.journal) if args.journal else None,
            args.new,
            args.http,
            args.host,
        )

        def say(message: str) -> None:
            print(f'[harness] {message}', file=sys.stderr, flush=True)

        return _with_policies(
            config, lambda: serve_mcp(config, options, say, serving), tasks=[args.task]
        )


def _tickets(args: argparse.Namespace) -> int:
    from harness_operator.budgets import OperatorBudgets
    from harness_operator.journal import Journal, JournalError, resolve_ticket

    path = Path(args.journal)
    if not path.is_file():
        return _fail(f'journal {path} {not_a_file(path)}')
    try:
        if args.resolve:
            ticket = resolve_ticket(path, args.resolve, args.note)
            _say(f'ticket {ticket.id} resolved: the {ticket.failure_class} budget starts again')
            return 0
        journal = Journal(path, OperatorBudgets({}))
    except JournalError as exc:
        return _fail(str(exc))
    tickets = journal.budgets.tickets
    if not tickets:
        print('no tickets')
    for t in tickets:
        note = f' -> {t.resolution!r}' if t.resolution else ''
        print(f'{t.id} {t.status:8} {t.failure_class}: {t.reason}{note}')
    return 0


def _export(args: argparse.Namespace) -> int:
    from harness_driver.lerobot import ExportError, export_runs

    try:
        summary = export_runs([Path(r) for r in args.runs], Path(args.lerobot), _say)
    except ExportError as exc:
        return _fail(str(exc))
    _say(
        f'{summary["episodes"]} trials ({summary["frames"]} frames) in {args.lerobot}; '
        f'{summary["demos"]} satisfied by tier 1-2 in {Path(args.lerobot) / "demos"}'
    )
    return 0


def _demos(args: argparse.Namespace) -> int:
    """The demonstration collector: the reference programs (the scripted agent) on sampled
    layouts as a bench whose cameras are recorded at every tick, then one LeRobot dataset of
    the trials a tier-1/2 verifier satisfied."""
    from dataclasses import replace

    from harness_bench.tasks import TASKS
    from harness_driver.lerobot import ExportError, write_demos
    from harness_types.config import ConfigError, load_config

    if bool(args.tasks) == bool(args.plan):
        return _fail('name the TASKs to collect or a --plan (`harness plan-collection`), not both')
    unknown = [t for t in args.tasks if t not in TASKS]
    if unknown:
        return _fail(f'no task {", ".join(unknown)}; tasks: {", ".join(TASKS)}')
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
    args.model, args.interface, args.perception, args.policies, args.seed = (
        'scripted',
        None,
        None,
        None,
        0,
    )
    args.out = str(out / 'bench')
    args.tasks = args.tasks or None
    status = _bench(args)
    if status:
        return status
    episodes = [  # the earlier collections' first, then this one's
        p.parent
        for folder in [*included, out]
        for p in sorted((folder / 'bench').glob('*/episodes/*/*/events.jsonl'))
    ]
    _say(f'writing the demonstrations of {len(episodes)} episodes to {out / "dataset"}')
    try:
        summary = write_demos(episodes, out / 'dataset', _say, args.image_size)
    except ExportError as exc:
        return _fail(str(exc))
    if not summary['episodes']:
        return _fail(f'no episode gave a demonstration (the episodes are under {out / "bench"})')
    (out / 'dataset' / 'collection.json').write_text(json.dumps(summary, indent=2) + '\n')
    _say(
        f'{summary["episodes"]} demonstrations ({summary["frames"]} frames; cameras: '
        f'{", ".join(summary["cameras"]) or "none"}) in {out / "dataset"}; '
        f'{len(summary["runs_without_demonstration"])} episodes gave none'
    )
    return 0


def _image_size(text: str) -> tuple[int, int]:
    """--image-size HxW, e.g. 96x128."""
    try:
        h, w = (int(v) for v in text.lower().split('x'))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f'expected HEIGHTxWIDTH, e.g. 96x128, not {text!r}'
        ) from None
    if not (8 <= h <= 4096 and 8 <= w <= 4096):
        raise argparse.ArgumentTypeError(f'each side must be 8..4096 pixels, not {text!r}')
    return h, w


def _report(args: argparse.Namespace) -> int:
    from harness_driver.run_report import ReportError, write_report

    code = 0
    for run in args.runs:
        try:
            _say(f'report: {write_report(Path(run))}')
        except (ReportError, OSError) as exc:
            print(f'harness: {exc}', file=sys.stderr)
            code = 2
    return code


def _replay(args: argparse.Namespace) -> int:
    from harness_driver.replay import ReplayError
    from harness_driver.replay_node import replay

    from harness_bringup.domain import use_discovery_profile

    use_discovery_profile()
    try:
        return replay(Path(args.run), args.rate, args.loop, args.delay, _say)
    except ReplayError as exc:
        return _fail(str(exc))


def _positive_float(text: str) -> float:
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f'must be positive, not {text}')
    return value


def _rate(text: str) -> float:
    value = _positive_float(text)
    if not 1e-3 <= value <= 1e3:
        raise argparse.ArgumentTypeError(f'a rate is within 0.001..1000, not {text}')
    return value


def _delay(text: str) -> float:
    value = _non_negative(text)
    if value > 3600:
        raise argparse.ArgumentTypeError(f'a delay is at most 3600 s, not {text}')
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a port number') from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f'a port is within 0..65535, not {value}')
    return value


def _layout(text: str) -> int:
    from harness_bench.layout import parse_layout

    try:
        return parse_layout(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _layouts(text: str) -> tuple[int, bool]:
    """--layouts: N (the first N fixed layouts) or random:N (N sampled ones)."""
    sampled = text.strip().lower().startswith('random:')
    count = text.split(':', 1)[1] if sampled else text
    try:
        value = int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected N or random:N, not {text!r}') from None
    if value < 1:
        raise argparse.ArgumentTypeError(f'expected at least 1 layout, not {value}')
    return value, sampled


def _interfaces(text: str) -> tuple[str, ...]:
    """--interface of the bench: one rung or several, comma-separated."""
    rungs = tuple(dict.fromkeys(r.strip() for r in text.split(',') if r.strip()))
    wrong = [r for r in rungs if r not in INTERFACES]
    if not rungs or wrong:
        raise argparse.ArgumentTypeError(
            f'interfaces are {", ".join(INTERFACES)} (comma-separated), not {text!r}'
        )
    return rungs


STRATEGY_HELP = (
    "with policies, the scripted baseline's strategy: A (the policy alone), B (the programs "
    "alone) or C (the policy, then the programs), instead of the catalogue's rule"
)


def _strategies(text: str) -> tuple[str, ...]:
    """--strategies of the bench: A, B, C and rule (the agent's choice), comma-separated."""
    ways = tuple(dict.fromkeys(w.strip() for w in text.split(',') if w.strip()))
    wrong = [w for w in ways if w not in ('A', 'B', 'C', 'rule')]
    if not ways or wrong:
        raise argparse.ArgumentTypeError(
            f'strategies are A, B, C and rule (comma-separated), not {text!r}'
        )
    return ways


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not an integer') from None


def _seed(text: str) -> int:
    value = _integer(text)
    if not 0 <= value <= INT64_MAX:
        raise argparse.ArgumentTypeError(f'a seed is an integer in 0..{INT64_MAX}, not {value}')
    return value


def _positive_int(text: str) -> int:
    value = _integer(text)
    if not 1 <= value <= INT64_MAX:
        raise argparse.ArgumentTypeError(f'must be in 1..{INT64_MAX}, not {value}')
    return value


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a number') from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f'must be a finite number, not {text}')
    return value


def _non_negative(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f'must be >= 0, not {value}')
    return value


ATTACH_HELP = (
    'join the station already running in this ROS domain (ROS_DOMAIN_ID, default 0), started '
    'with `ros2 launch harness_bringup <setup>.launch.py` or `harness serve`, instead of '
    "starting one; the station keeps its own parameters (the launch's config)"
)


DEFAULT_POLICIES = '(beside the config)'
POLICIES_HELP = (
    'enable the learned half with a policy catalogue (overrides kernel.policies; default '
    'FILE: policies.yaml beside the config file): start(strategy, kind) first, list_policies, '
    "run_policy; the catalogue's local servers are started when they do not answer"
)


def _policy_serve(args: argparse.Namespace) -> int:
    from harness_policy.catalog import load_catalog
    from harness_types.config import ConfigError

    from harness_bringup.policy_broker import BrokerError, host_port
    from harness_bringup.policy_servers import LEROBOT, SERVABLE, SERVERS, serve, serve_trained

    try:
        config = _load(args)
        path = config.kernel.policies or _policies_path(
            argparse.Namespace(policies=DEFAULT_POLICIES), _config_path(args)
        )
        spec = load_catalog(path).get(args.name)
        host, port = host_port(spec.endpoint)
    except (FileNotFoundError, ConfigError, BrokerError, ValueError) as exc:
        return _fail(str(exc))
    if not spec.serve:
        return _fail(f'policy {spec.name} is external (no `serve` in its catalogue entry)')
    host = args.host or host
    port = port if args.port is None else args.port
    if spec.serve == LEROBOT:  # a trained checkpoint: served where torch and LeRobot are
        return serve_trained(spec.name, spec.checkpoint, host, port, _say)
    if spec.serve not in SERVABLE:
        return _fail(
            f'policy {spec.name}: no local server {spec.serve!r}; servers: {", ".join(SERVERS)}'
        )
    return serve(spec.serve, host, port, _say)


def _policy_train(args: argparse.Namespace) -> int:
    from harness_learning.training import TrainError, TrainPlan, check_dataset, train
    from harness_policy.learning_env import LearningEnvError, ensure_learning_python

    plan = TrainPlan(
        dataset=Path(args.dataset),
        out=Path(args.out),
        policy=args.policy,
        steps=args.steps,
        batch_size=args.batch_size,
        seed=args.seed,
        cameras=tuple(args.cameras or ()),
        save_every=min(args.save_every, args.steps),
        log_every=max(1, min(50, args.steps // 10)),
        threads=args.threads,
        width=args.width,
    )
    try:
        check_dataset(plan.dataset, plan.cameras)  # before a minutes-long install
        python = ensure_learning_python(_say)
        record = train(plan, python, _say)
    except (TrainError, LearningEnvError) as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        _say(
            f'training stopped; the same command resumes it from its last checkpoint in {plan.out}'
        )
        return 130
    _say(
        f'trained {record["policy"]} in {record["seconds"] / 60:.1f} min, final loss '
        f'{record["final_loss"]}; checkpoint {plan.out / record["checkpoint"]}'
    )
    _say(
        'serve it from the catalogue (config/policies.yaml): an entry with `serve: lerobot` and '
        f'`checkpoint: {plan.out.resolve()}`'
    )
    return 0


def _up(args: argparse.Namespace) -> int:
    import signal

    from harness_types.config import ConfigError

    from harness_bringup.policy_broker import BrokerError, answers
    from harness_bringup.run import UsageError

    try:
        if args.policies is None:
            args.policies = DEFAULT_POLICIES
        config = _load(args)
        broker = _broker(config)
    except (FileNotFoundError, ConfigError, UsageError) as exc:
        return _fail(str(exc))

    def interrupted(*_) -> None:
        raise KeyboardInterrupt  # SIGTERM stops the servers started here, as Ctrl-C does

    signal.signal(signal.SIGTERM, interrupted)
    with broker:
        try:
            started = broker.ensure()
        except BrokerError as exc:
            return _fail(str(exc))
        except KeyboardInterrupt:
            return 130
        for spec in broker.catalog.policies.values():
            if spec.name in started:
                state = 'started'
            elif spec.serve:
                state = 'already answering'
            else:
                state = 'external, ' + ('answering' if answers(spec.endpoint) else 'NOT answering')
            _say(f'policy {spec.name} at {spec.endpoint}: {state}')
        _say('serving; Ctrl-C stops the servers started here')
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            return 0


INTERFACE_HELP = (
    'what one model reply may do (overrides driver.interface): programs (a program per reply, '
    'the harness), skills (R1: one API call per reply, as tool-calling agents work) or actions '
    '(R0: one end-effector or joint target per reply)'
)
PERCEPTION_HELP = (
    'what locate() sees with (overrides kernel.perception): pixels (RGB-D images and '
    "calibration, what a real camera feeds), oracle (the simulator's segmentation, ground "
    'truth) or service (the detector at kernel.perception_service_url)'
)


def _task_arguments(parser: argparse.ArgumentParser, example: str) -> None:
    """TASK, --layout and --seed: what one episode of a bench task is."""
    parser.add_argument('task', help=f'bench task, e.g. {example}')
    parser.add_argument(
        '--layout',
        type=_layout,
        default=0,
        help="task layout: a fixed one (0, 1, 2) or 'random', the layout sampled from --seed "
        '(default 0)',
    )
    parser.add_argument(
        '--seed',
        type=_seed,
        default=0,
        help="seed (default 0): jitters a fixed layout's objects by millimetres, or samples the "
        'random layout',
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='harness',
        description='Run the dual-arm ARX X5 harness: episodes with a model, programs without '
        'one, the worker alone, a set-up check.',
    )
    parser.add_argument(
        '--config',
        help='node graph parameters (default: $HARNESS_CONFIG, which ./harness sets to '
        "config/harness.yaml, else ./config/harness.yaml, else the workspace's "
        'config/harness.yaml)',
    )
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')

    run = sub.add_parser(
        'run',
        help='run one episode: the model writes programs until the task is finished',
        description='Start the node graph (worker, skill server, a kernel per episode, the '
        'driver), reset TASK and let the model write programs at each decision point until it '
        'finishes or a budget ends the episode. `--model scripted` is a baseline that answers '
        "with the task's reference program and needs no key; any other name is a Claude model "
        'reached through ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL if set). Writes a run folder '
        '(summary.json, events.jsonl, kernel.log, images/, bag/ a rosbag2). Exits 0 when the '
        'episode ended, whatever its success; 1 on an error; 2 on bad input or an unreachable '
        'model.',
    )
    _task_arguments(run, 'lift_cube')
    run.add_argument('--model', help='scripted or a Claude model name (default: driver.model)')
    run.add_argument('--out', default='runs', help='where run folders go (default runs/)')
    run.add_argument(
        '--max-model-calls', type=_positive_int, help='override driver.max_model_calls'
    )
    run.add_argument(
        '--max-cost-usd', type=_non_negative, help='override driver.max_cost_usd (0 = none)'
    )
    run.add_argument(
        '--max-wall-seconds', type=_non_negative, help='override driver.max_wall_seconds'
    )
    run.add_argument('--attach', action='store_true', help=ATTACH_HELP)
    run.add_argument('--perception', choices=PERCEPTION_BACKENDS, help=PERCEPTION_HELP)
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

    bench = sub.add_parser(
        'bench',
        help='run the task suite and write result tables',
        description='Run episodes of every task (or --tasks) on its first --layouts layouts, '
        'in parallel where the machine allows (each episode is its own process in its own ROS '
        'domain, supervised as `harness run` supervises it), then write per-task and overall '
        'tables (success rate, score, model calls, decisions by reason, tokens, cost, env '
        'steps; wall time separately) as Markdown and JSON under --out. Ctrl-C ends the '
        'running episodes (their run folders are written) and starts no other.',
    )
    bench.add_argument('--tasks', nargs='+', metavar='TASK', help='tasks to run (default: all)')
    bench.add_argument(
        '--layouts',
        type=_layouts,
        default=(3, False),
        metavar='N|random:N',
        help='layouts per task: N runs the first N fixed layouts (default 3), random:N runs N '
        'layouts sampled from seeds --seed-base, --seed-base + 1, ... (every one feasible: the '
        'task checks reach and view before it accepts a sample)',
    )
    bench.add_argument(
        '--seed', type=_seed, default=0, help='seed of every fixed-layout episode (default 0)'
    )
    bench.add_argument(
        '--seed-base',
        type=_seed,
        default=0,
        help='the first seed of the random:N layouts (default 0)',
    )
    bench.add_argument('--model', help='scripted or a Claude model name (default: driver.model)')
    bench.add_argument('--out', default='runs', help='where the bench folder goes (default runs/)')
    bench.add_argument(
        '--jobs', type=_positive_int, help='episodes at a time (default: one per two cores)'
    )
    bench.add_argument('--perception', choices=PERCEPTION_BACKENDS, help=PERCEPTION_HELP)
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
        '--plan',
        metavar='PLAN',
        help='run the sampled layouts of a collection plan (`harness plan-collection`) instead '
        'of --tasks and --layouts',
    )
    bench.set_defaults(func=_bench)

    program = sub.add_parser(
        'program',
        help='run a program file on a task without a model',
        description='Start the node graph, reset TASK, run FILE as one program cell in an '
        'isolated kernel, read the outcome. Writes a run folder (summary.json, events.jsonl, '
        'kernel.log). Exits 0 when the episode ran, whatever its success.',
    )
    _task_arguments(program, 'lift_cube')
    program.add_argument('file', help='Python program using the program API')
    program.add_argument('--out', default='runs', help='where run folders go (default runs/)')
    program.add_argument('--attach', action='store_true', help=ATTACH_HELP)
    program.add_argument('--perception', choices=PERCEPTION_BACKENDS, help=PERCEPTION_HELP)
    program.add_argument(
        '--policies', nargs='?', const=DEFAULT_POLICIES, metavar='FILE', help=POLICIES_HELP
    )
    program.set_defaults(func=_program)

    serve = sub.add_parser(
        'serve',
        help='start the station (worker and skill server) and serve it',
        description='Start the worker (with the configured backend) and the skill server in '
        'this process, with the parameters of the config file, and serve worker/* and skills/* '
        'until interrupted (ROS_DOMAIN_ID as set in the environment).',
    )
    serve.add_argument(
        'ros_args',
        nargs=argparse.REMAINDER,
        help='ROS arguments for both nodes: --ros-args -p NAME:=VALUE ... (or after --)',
    )
    serve.set_defaults(func=_serve)

    up = sub.add_parser(
        'up',
        help="start the policy catalogue's local servers and keep them up",
        description='Start every local server of the policy catalogue (a policy whose entry '
        'has `serve`) that does not answer at its endpoint, and keep them up until interrupted, '
        'so that episodes with --policies find them answering. Without `harness up` an episode '
        'with policies starts the missing servers itself and stops them at its end. Only an '
        'entry with a fixed port is kept for other commands: an entry of port 0 gets a free '
        'port that later commands cannot know, so they start their own.',
    )
    up.add_argument(
        '--policies',
        metavar='FILE',
        help='the catalogue (default: policies.yaml beside the config file)',
    )
    up.set_defaults(func=_up)

    policy = sub.add_parser(
        'policy',
        help='policies: `harness policy train` (LeRobot, CPU) and `harness policy serve NAME`',
        description='Train a policy on a harness dataset with LeRobot (`train`), or serve one '
        'of the catalogue (`serve`). Policy servers speak the websocket + msgpack protocol of '
        'openpi policy servers (docs/POLICY_PROTOCOL.md).',
    )
    policy_sub = policy.add_subparsers(dest='policy_command', required=True, metavar='COMMAND')
    policy_serve = policy_sub.add_parser(
        'serve',
        help='serve one policy of the catalogue',
        description="Serve policy NAME (a catalogue entry with `serve`) at its endpoint's "
        'host and port (or --host/--port) until interrupted; each connection gets a fresh '
        'policy.',
    )
    policy_serve.add_argument('name', help='a policy of the catalogue, e.g. scripted_expert')
    policy_serve.add_argument('--host', help="override the endpoint's host")
    policy_serve.add_argument('--port', type=_port, help="override the endpoint's port")
    policy_serve.add_argument(
        '--policies',
        metavar='FILE',
        help='the catalogue (default: kernel.policies, else policies.yaml beside the config file)',
    )
    policy_serve.set_defaults(func=_policy_serve)
    policy_train = policy_sub.add_parser(
        'train',
        help='train a policy on a dataset with LeRobot (CPU)',
        description="Train LeRobot's own ACT or diffusion policy class with LeRobot's own "
        'training script on a LeRobot v3.0 dataset of the harness (`harness demos`), on CPU, '
        'from scratch, in the learning extra (installed on first use: ~8 GB). The policy sees '
        'the joint state, the object the programs located (observation.environment_state) and '
        'the --cameras asked for. Progress shows step, loss and time left; checkpoints are '
        "LeRobot's (OUT/lerobot/checkpoints/STEP/pretrained_model); the same command resumes a "
        'stopped run; OUT/harness_training.json is the training record a catalogue entry is '
        'served from.',
    )
    policy_train.add_argument(
        '--dataset', required=True, metavar='DIR', help='a LeRobot v3.0 dataset'
    )
    policy_train.add_argument('--out', required=True, metavar='OUT', help='the training folder')
    policy_train.add_argument('--policy', choices=('act', 'diffusion'), default='act')
    policy_train.add_argument('--steps', type=_positive_int, default=5000, help='default 5000')
    policy_train.add_argument('--batch-size', type=_positive_int, default=32, help='default 32')
    policy_train.add_argument('--seed', type=_seed, default=0, help='default 0')
    policy_train.add_argument(
        '--cameras', nargs='*', metavar='CAM', help='cameras the policy sees (default: none)'
    )
    policy_train.add_argument(
        '--save-every', type=_positive_int, default=1000, help='checkpoint every N steps'
    )
    policy_train.add_argument(
        '--threads',
        type=_positive_int,
        default=1,
        help="torch's threads (default 1: a small policy's step is fastest on one; more "
        'threads than free cores thrash)',
    )
    policy_train.add_argument(
        '--width',
        type=_positive_int,
        default=256,
        help="ACT's model width (dim_model; default 256: ~2.7M parameters, an 11 MB checkpoint; "
        '128: ~0.8M, 3 MB)',
    )
    policy_train.set_defaults(func=_policy_train)
    adopt_command.add_parser(policy_sub, _layouts, _seed, _positive_int)

    mcp = sub.add_parser(
        'mcp',
        help='serve the station to a coding agent over MCP (stdio, or --http PORT)',
        description='Start the node graph for TASK and serve it as an MCP server (the `mcp` '
        'SDK) to an agent operator such as Claude Code: tools observe, do_action, run_batch, '
        'recheck, estop, journal, tickets, budgets and finish (with --policies also '
        'list_policies and run_policy, and the executor policy:NAME). Every action returns '
        "executor_status (what the motion did) and verdict (what the station's tiered verifier "
        'measured); the same key twice returns the same trial. Budgets per failure class '
        '(config: operator) open tickets when exhausted; `harness tickets` resolves them. The '
        'journal (--journal) outlives the session: started again with it, the server resumes '
        "the run (in simulation it runs the journal's trials again; on hardware nothing). "
        'Standard output carries the protocol; logs go to standard error. Writes a run folder '
        'per session, with its trials as a LeRobot dataset.',
    )
    _task_arguments(mcp, 'place_in_bowl')
    mcp.add_argument(
        '--out', default='runs/mcp', help='run folders and journals (default runs/mcp)'
    )
    mcp.add_argument(
        '--journal',
        metavar='FILE',
        help='the run journal (default: OUT/TASK-lLAYOUT-sSEED.journal.jsonl); an existing one '
        'is resumed',
    )
    mcp.add_argument(
        '--new', action='store_true', help='start a fresh journal (the old one is kept, renamed)'
    )
    mcp.add_argument(
        '--http',
        type=_port,
        metavar='PORT',
        help='serve streamable HTTP at PORT/mcp, not stdio; every request needs the bearer '
        'token printed at start and written to OUT/mcp-PORT.token (mode 0600)',
    )
    mcp.add_argument('--host', default='127.0.0.1', help='HTTP host (default 127.0.0.1)')
    mcp.add_argument('--perception', choices=PERCEPTION_BACKENDS, help=PERCEPTION_HELP)
    mcp.add_argument(
        '--policies', nargs='?', const=DEFAULT_POLICIES, metavar='FILE', help=POLICIES_HELP
    )
    mcp.set_defaults(func=_mcp)

    tickets = sub.add_parser(
        'tickets',
        help="list a run journal's tickets, or resolve one (the station owner's call)",
        description='List the tickets of JOURNAL (opened when an agent operator exhausted a '
        'budget), or resolve one with --resolve ID: its failure class gets its budget again; a '
        'running `harness mcp` sees it at its next call.',
    )
    tickets.add_argument('journal', help='a run journal (harness mcp --journal)')
    tickets.add_argument('--resolve', metavar='ID', help='the ticket to resolve, e.g. T1')
    tickets.add_argument('--note', default='', help='what the owner did about it')
    tickets.set_defaults(func=_tickets)

    export = sub.add_parser(
        'export',
        help='convert run folders to a LeRobot v3 dataset',
        description='Write the trials of RUN folders (episodes of harness run, program, bench '
        'and mcp) as a LeRobot v3.0 dataset at DIR: parquet frames of state and action at the '
        'control rate, MP4 videos of each camera, meta/ with tasks, episodes (layout, executor, '
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
        help='collect the layouts of a plan (`harness plan-collection`) as it is, in its order',
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
        default=(10, True),
        metavar='N|random:N',
        help='layouts per task (default random:10): random:N samples N layouts from seeds '
        '--seed-base.., N the first N fixed ones',
    )
    demos.add_argument(
        '--seed-base', type=_seed, default=1000, help='the first sampled seed (default 1000)'
    )
    demos.add_argument('--out', required=True, metavar='OUT', help='a new folder for it all')
    demos.add_argument(
        '--jobs', type=_positive_int, help='episodes at a time (default: one per two cores)'
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
    plan_command.add_parser(sub, _positive_int, _seed)
    outcome_command.add_parser(sub)

    report = sub.add_parser(
        'report',
        help="(re)make a run folder's report.html",
        description='Write RUN/report.html: one self-contained page (images and plots inline, '
        'no network) with the task, model, status, outcome, calls by reason, tokens, cost and '
        'wall time by phase; the timeline of decision points (reason, request size, the reply, '
        "the cell's status, output and executions, the images the model saw); plots over "
        'ticks of the joints and grippers with executions, events and shield rejections '
        'marked (from the bag); the wrap-up and the outcome. `harness run` and `harness '
        'program` write it at the end of every episode.',
    )
    report.add_argument('runs', nargs='+', metavar='RUN', help='run folders')
    report.set_defaults(func=_report)

    replay = sub.add_parser(
        'replay',
        help="publish a run's bag into the live ROS graph (rviz, rqt, Foxglove)",
        description="Publish RUN's bag (runs/<run>/bag) into the ROS graph of ROS_DOMAIN_ID "
        "at the recording's pace, each topic with its recorded QoS (the description, "
        "/tf_static, the events and the model's images latched), with the episode's /clock. "
        'Where a ROS installation is present, `ros2 bag play RUN/bag --clock` plays the same '
        'bag. Exits 0 at the end of the bag, 130 when interrupted.',
    )
    replay.add_argument('run', help='a run folder (or its bag/ folder)')
    replay.add_argument(
        '--rate', type=_rate, default=1.0, help='times the recording pace (default 1)'
    )
    replay.add_argument('--loop', action='store_true', help='start again at the end')
    replay.add_argument(
        '--delay',
        type=_delay,
        default=1.0,
        help='seconds to wait before the first message, for subscribers to connect (default 1)',
    )
    replay.set_defaults(func=_replay)

    smoke = sub.add_parser(
        'smoke',
        help='check the workspace: two nodes, a service and an action round trip',
        description='Start two real nodes in a private ROS domain and do a harness_msgs '
        'service and action round trip; prints JSON with the latencies.',
    )
    smoke.set_defaults(func=_smoke)
    return parser


# Where a command writes: checked (and made) before anything starts, so that a file or an
# unwritable place in the way is one line, not a traceback after the graph started. The folders
# made for it are removed again if the command fails and leaves them empty (bad other input).
# command: (attribute, flag, True when the flag names a file whose folder is made)
OUT = ('out', '--out', False)
OUTPUTS = {
    'run': (OUT,),
    'program': (OUT,),
    'bench': (OUT,),
    'mcp': (OUT, ('journal', '--journal', True)),
    'export': (('lerobot', '--lerobot', False),),
}


def _output_problem(text: str, names_file: bool, made: list[Path]) -> str:
    """Why `text` cannot be written to (its folder made), or ''. The folders it made are
    appended to `made` (_make_folder)."""
    if not text.strip():
        return 'names no folder' if not names_file else 'names no file'
    path = Path(text)
    folder = path.parent if names_file else path
    if names_file and path.is_dir():
        return 'is a folder'
    above = folder
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        return 'is a file, not a folder' if above == path else f'is inside {above}, a file'
    try:
        _make_folder(folder, made)
    except OSError as exc:
        return f'cannot be made: {exc.strerror or exc}'
    if not os.access(folder, os.W_OK | os.X_OK):
        return f'{folder} is not writable'
    return ''


def _make_folder(folder: Path, made: list[Path]) -> None:
    """Make `folder` and the missing folders above it one at a time, appending to `made` only
    those this call made, outermost first: a folder that was there, or that another process
    made meanwhile, is never taken for ours."""
    for step in [*reversed(folder.parents), folder]:
        if step.is_dir():
            continue
        try:
            step.mkdir()
        except FileExistsError:
            continue  # made meanwhile by another process: not ours (a file fails below)
        made.append(step)


def _remove_if_empty(folders: list[Path]) -> None:
    """Remove the folders made for a failed command's output that it left empty, innermost
    first."""
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except FileNotFoundError:
            continue
        except OSError:  # not empty: what is above it is not empty either
            return


def main(argv: list[str] | None = None) -> int:
    from harness_bringup.processes import use_wheels_ament_prefix

    argv = sys.argv[1:] if argv is None else list(argv)
    use_wheels_ament_prefix()
    parser = build_parser()
    # `harness serve --ros-args -p x:=1`: what follows --ros-args is ROS's, not argparse's.
    split = argv.index('--ros-args') if '--ros-args' in argv else None
    ros_args = None if split is None else argv[split + 1 :]
    args = parser.parse_args(argv[:split])
    if ros_args is not None and args.command != 'serve':
        return _fail(f'only `harness serve` takes --ros-args, not `harness {args.command}`')
    if args.command == 'serve':
        args.ros_args = [a for a in args.ros_args if a != '--'] + (ros_args or [])
    args.argv = argv
    made: list[Path] = []
    code = 1  # until the command returns: an exception leaves nothing of its own either
    try:
        for name, flag, names_file in OUTPUTS.get(args.command, ()):
            value = getattr(args, name, None)
            if value is not None and (problem := _output_problem(value, names_file, made)):
                code = _fail(f'{flag} {value!r} {problem}')
                return code
        code = args.func(args)
        return code
    finally:
        if code != 0:
            _remove_if_empty(made)


if __name__ == '__main__':
    sys.exit(main())
