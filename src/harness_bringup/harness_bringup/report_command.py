"""`harness report` and `harness replay`: a run's report again, and its bag replayed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness_bringup.arguments import _delay, _rate
from harness_bringup.console import fail as _fail
from harness_bringup.console import say as _say


def add_parser(sub) -> None:
    report = sub.add_parser(
        'report',
        help="(re)make a run folder's report.html",
        description='Write RUN/report.html: one self-contained page (images and plots inline, '
        'no network) with the task, model, status, outcome, calls by reason, tokens, cost and '
        'wall time by phase; the timeline of decision points (reason, request size, the reply, '
        "the cell's status, output and executions, the images the model saw); plots over "
        'ticks of the joints and grippers with executions, events and shield rejections '
        'marked (from the bag); the wrap-up and the outcome. `harness run` writes it at the end '
        'of every episode, except at the lean recording level (driver.recording), whose runs '
        'get theirs from this command; `harness program` writes one of its cell and outcome '
        '(it records no bag).',
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
        'bag. Exits 0 at the end of the bag, 130 when interrupted, 1 when a damaged bag ended '
        'before all its messages were published (it says how many were), 2 when it cannot be '
        'read at all.',
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


def _report(args: argparse.Namespace) -> int:
    from harness_recording.run_report import ReportError, write_report

    code = 0
    for run in args.runs:
        try:
            _say(f'report: {write_report(Path(run))}')
        except (ReportError, OSError) as exc:
            print(f'harness: {exc}', file=sys.stderr)
            code = 2
    return code


def _replay(args: argparse.Namespace) -> int:
    from harness_recording.replay import ReplayError
    from harness_recording.replay_node import replay

    from harness_bringup.domain import attached_domain_id, use_discovery_profile

    try:
        attached_domain_id()  # the domain its viewers are in: said here, not by rcl
    except ValueError as exc:
        return _fail(str(exc))
    use_discovery_profile()
    try:
        return replay(Path(args.run), args.rate, args.loop, args.delay, _say)
    except ReplayError as exc:
        return _fail(str(exc))
