"""`harness program TASK FILE`: a program file as one cell, without a model."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import asdict
from pathlib import Path

from harness_kernel.channel import MAX_HEADER
from harness_types.config import not_a_file
from harness_types.whole_file import read_text

from harness_bringup.arguments import (
    ATTACH_HELP,
    DEFAULT_POLICIES,
    PERCEPTION_HELP,
    POLICIES_HELP,
    RANDOMIZE_HELP,
    _perception,
    _randomize,
    _task_arguments,
)
from harness_bringup.console import fail as _fail
from harness_bringup.console import quoted
from harness_bringup.console import say as _say
from harness_bringup.settings import _attachable, _load, _outcome_line, _with_policies

# The largest program file taken: a quarter of the kernel channel's bound on one message.
MAX_PROGRAM_BYTES = MAX_HEADER // 4


def add_parser(sub) -> None:
    program = sub.add_parser(
        'program',
        help='run a program file on a task without a model',
        description='Start the node graph, reset TASK, run FILE as one program cell in an '
        'isolated kernel, read the outcome. Writes a run folder (summary.json, events.jsonl, '
        "kernel.log and the kernel's output, params.yaml, images/, the program's workspace/ "
        'and report.html; no bag, ticks or dataset: harness run records those). Exits 0 when '
        'the episode ran, whatever its success; 1 when a policy server failed under it '
        '(policy_service_failed) or the graph did not start; 2 for bad input or a policy '
        'server that cannot start.',
    )
    _task_arguments(program, 'lift_cube')
    program.add_argument(
        '--randomize', type=_randomize, default=(), metavar='AXES', help=RANDOMIZE_HELP
    )
    program.add_argument('file', help='Python program using the program API')
    program.add_argument('--out', default='runs', help='where run folders go (default runs/)')
    program.add_argument('--attach', action='store_true', help=ATTACH_HELP)
    program.add_argument('--perception', type=_perception, help=PERCEPTION_HELP)
    program.add_argument(
        '--policies', nargs='?', const=DEFAULT_POLICIES, metavar='FILE', help=POLICIES_HELP
    )
    program.set_defaults(func=_program)


# The largest program file taken: a quarter of the kernel channel's bound on one message.
MAX_PROGRAM_BYTES = MAX_HEADER // 4


def _program(args: argparse.Namespace) -> int:
    from harness_bench.layout import layout_name
    from harness_bench.randomization import axes_name
    from harness_driver.models import INSTRUCTION
    from harness_policy.stream import failed_service
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
        check_station_settings(config, own_station=not args.attach)
        if args.attach:
            _attachable()
    except (FileNotFoundError, ConfigError, UsageError) as exc:
        return _fail(str(exc))
    try:
        # (a cell's code travels to the program process in one channel message: a 50 MB file
        # started the whole graph, failed there, and was copied into the run folder twice)
        code = read_text(program, most=MAX_PROGRAM_BYTES).removeprefix('\ufeff')
    except OSError as exc:
        return _fail(f'program file {program} cannot be read: {exc.strerror or exc}')
    except UnicodeDecodeError as exc:
        return _fail(f'program file {program} is not UTF-8 text: {exc.reason} at byte {exc.start}')
    try:
        compile(code, str(program), 'exec')
    except SyntaxError as exc:
        where = f':{exc.lineno}' if exc.lineno else ''
        return _fail(f'{program}{where}: {exc.msg}')

    from harness_driver.driver_node import GraphError
    from harness_recording.run_folder import RunFolder, cell_record

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
            'randomize': axes_name(args.randomize),
            'agent': 'a program file, no model',
            'program': str(program),
            'status': 'error',
        }
        started = time.monotonic()
        try:
            from harness_bringup.domain import attached_domain_id

            graph_words = (
                f'joining the station in ROS domain {attached_domain_id()}, starting the kernel'
                if args.attach
                else 'starting the graph (worker, skill server, kernel)'
            )
            _say(f'{graph_words} for {args.task} layout {layout_name(args.layout)}')
            with EpisodeGraph(params, attach=args.attach) as graph:
                summary.update(graph.notes)  # the worker's backend and perception's, as run has
                start = graph.reset(args.task, args.layout, args.seed, args.randomize)
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
                    print(quoted(cell.output.rstrip()))
                if cell.traceback:
                    print(quoted(cell.traceback.rstrip()))
                if cell.stopped_by is not None:
                    _say(f'stopped by {cell.stopped_by.event}: {cell.stopped_by.detail}')
                _say(f'cell {cell.status}: {len(cell.executions)} executions')
                graph.stop_kernel()
                outcome = graph.outcome(end=True)
                # a policy run's server that failed: not run, as harness run has it
                failed = failed_service(cell.executions)
                if failed:
                    summary['detail'] = failed
                summary.update(
                    status='policy_service_failed' if failed else cell.status,
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
            _say(f'error: {exc}', file=sys.stderr)
            return 1
        finally:
            summary['wall_seconds'] = round(time.monotonic() - started, 2)
            run.summary(summary)
            run.close()
            write_report_safely(run.path, _say)
            _say(f'run folder: {run.path}')
        return 1 if summary['status'] == 'policy_service_failed' else 0  # (as harness run)

    return _with_policies(config, episode, tasks=[args.task])
