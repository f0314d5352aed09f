"""The `harness` command.

harness program TASK FILE [--layout N] [--seed S] [--out DIR]   run a program without a model
harness serve [--ros-args ...]                                  the worker alone
harness smoke                                                   check the ROS set-up
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path


def _fail(message: str) -> int:
    print(f'harness: {message}', file=sys.stderr)
    return 2


def _config(args: argparse.Namespace) -> Path | None:
    path = args.config or os.environ.get('HARNESS_CONFIG')
    if not path:
        return None
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'config file {path} does not exist')
    return path


def _smoke(_args: argparse.Namespace) -> int:
    from harness_worker.ros_domain import claim_domain_id

    from harness_driver.smoke import run_smoke

    claim = claim_domain_id()
    try:
        result = run_smoke(claim.domain_id)
    finally:
        claim.release()
    print(json.dumps({'ok': True, 'domain_id': claim.domain_id, **asdict(result)}))
    return 0


def _program(args: argparse.Namespace) -> int:
    from harness_bench.tasks import TASKS

    if args.task not in TASKS:
        return _fail(f'unknown task {args.task!r}; known tasks: {", ".join(sorted(TASKS))}')
    layouts = TASKS[args.task].layouts
    if not 0 <= args.layout < layouts:
        return _fail(f'{args.task} has layouts 0..{layouts - 1}, not {args.layout}')
    program = Path(args.file)
    if not program.is_file():
        return _fail(f'program file {program} does not exist')
    try:
        config = _config(args)
    except FileNotFoundError as exc:
        return _fail(str(exc))
    code = program.read_text()
    try:
        compile(code, str(program), 'exec')
    except SyntaxError as exc:
        return _fail(f'{program}:{exc.lineno}: {exc.msg}')

    from harness_driver.graph import EpisodeGraph, GraphError

    stamp = time.strftime('%Y%m%d-%H%M%S')
    run_dir = Path(args.out) / f'{stamp}-{args.task}-{args.layout}-{args.seed}-program'
    run_dir.mkdir(parents=True, exist_ok=True)
    summary = {
        'task': args.task,
        'layout': args.layout,
        'seed': args.seed,
        'strategy': 'program',
        'program': str(program),
        'status': 'error',
    }
    events = open(run_dir / 'events.jsonl', 'w')  # noqa: SIM115 (closed below)
    started = time.monotonic()
    try:
        print(
            f'[harness] starting the graph (worker, skill server, kernel) for {args.task} '
            f'layout {args.layout} seed {args.seed}',
            flush=True,
        )
        with EpisodeGraph(config) as graph:
            reset = graph.reset(args.task, args.layout, args.seed)
            print(f'[harness] instruction: {reset.instruction}', flush=True)
            graph.start_kernel(run_dir / 'workspace', run_dir / 'kernel.log')
            print(f'[harness] running {program}', flush=True)
            cell = graph.run_cell(code)
            record = {
                'type': 'cell',
                'status': cell.status,
                'output': cell.output,
                'traceback': cell.traceback,
                'event': cell.event.name or None,
                'event_detail': cell.event.detail,
                'executions': [
                    {
                        'skill': t.skill,
                        'arm': t.arm,
                        'event': t.event.name,
                        'detail': t.event.detail,
                        'ticks': len(t.ticks),
                    }
                    for t in cell.executions
                ],
            }
            events.write(json.dumps(record) + '\n')
            if cell.output:
                print(cell.output.rstrip())
            if cell.traceback:
                print(cell.traceback.rstrip())
            if cell.event.name:
                print(f'[harness] stopped by {cell.event.name}: {cell.event.detail}')
            print(f'[harness] cell {cell.status}: {len(cell.executions)} executions', flush=True)
            graph.stop_kernel()
            outcome = graph.outcome()
            steps = graph.worker.worker.step
            summary.update(
                status=cell.status,
                env_steps=steps,
                outcome={
                    'success': outcome.success,
                    'score': outcome.score,
                    'detail': outcome.detail,
                },
            )
            print(
                f'[harness] outcome: {"SUCCESS" if outcome.success else "no success"} '
                f'(score {outcome.score:.2f}): {outcome.detail}'
            )
    except (GraphError, TimeoutError) as exc:
        summary['error'] = str(exc)
        print(f'[harness] error: {exc}', file=sys.stderr)
        return 1
    finally:
        summary['wall_seconds'] = round(time.monotonic() - started, 2)
        events.close()
        (run_dir / 'summary.json').write_text(json.dumps(summary, indent=2) + '\n')
        print(f'[harness] run folder: {run_dir}')
    return 0


def _serve(args: argparse.Namespace) -> int:
    from harness_worker.worker_node import main as worker_main

    ros_args = ['--ros-args', *args.ros_args] if args.ros_args else []
    try:
        config = _config(args)
    except FileNotFoundError as exc:
        return _fail(str(exc))
    if config is not None:
        ros_args = ros_args or ['--ros-args']
        ros_args += ['--params-file', str(config)]
    print('[harness] worker serving /worker/* (Ctrl-C to stop)', flush=True)
    return worker_main(['worker', *ros_args])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog='harness',
        description='Run the dual-arm ARX X5 harness: programs on bench tasks, the worker, checks.',
    )
    parser.add_argument(
        '--config',
        help='node graph parameters (default: $HARNESS_CONFIG, set by '
        './harness to config/harness.yaml)',
    )
    sub = parser.add_subparsers(dest='command', required=True, metavar='COMMAND')

    program = sub.add_parser(
        'program',
        help='run a program file on a task without a model',
        description='Start the node graph, reset TASK, run FILE as one program cell in an '
        'isolated kernel, read the outcome. Writes a run folder (summary.json, events.jsonl, '
        'kernel.log). Exits 0 when the episode ran, whatever its success.',
    )
    program.add_argument('task', help='bench task, e.g. lift_cube')
    program.add_argument('file', help='Python program using the program API')
    program.add_argument('--layout', type=int, default=0, help='task layout (default 0)')
    program.add_argument('--seed', type=int, default=0, help='seed (default 0)')
    program.add_argument('--out', default='runs', help='where run folders go (default runs/)')
    program.set_defaults(func=_program)

    serve = sub.add_parser(
        'serve',
        help='start the worker node alone',
        description='Start the worker (MuJoCo station) and serve its services until interrupted.',
    )
    serve.add_argument('ros_args', nargs=argparse.REMAINDER, help='arguments after --ros-args')
    serve.set_defaults(func=_serve)

    smoke = sub.add_parser(
        'smoke',
        help='check the workspace: two nodes, a service and an action round trip',
        description='Start two real nodes in a private ROS domain and do a harness_msgs '
        'service and action round trip; prints JSON with the latencies.',
    )
    smoke.set_defaults(func=_smoke)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
