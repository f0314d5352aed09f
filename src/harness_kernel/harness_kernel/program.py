"""The program process: untrusted code's home for one episode.

Forked by the kernel node's program spawner (program_spawner.py, which imported this module),
or started as `python -m harness_kernel.program CONFIG_JSON`, with one inherited socket (the
channel) and stdout/stderr on a pipe the kernel node reads and clips. It imports everything it
needs, sandboxes itself (harness_kernel.sandbox), reports ready, and
then runs the cells the kernel sends, one at a time, in one persistent namespace. It has no
ROS, no network and no way to start processes or threads; everything that touches the robot
is a request over the channel.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from dataclasses import asdict

import numpy as np  # noqa: F401 (imported before the sandbox: programs use it)
from harness_reactive.stage import ProgramStage

from harness_kernel.cell import (
    CellOutcome,
    CellRunner,
    CellTimeout,
    ReactiveTimeout,
    WorkspaceFull,
)
from harness_kernel.channel import Channel, ChannelClosedError, Codec
from harness_kernel.program_api import ProgramApi
from harness_kernel.program_host import (
    CELL_TIMEOUT_SIGNAL,
    REACTIVE_TIMEOUT_SIGNAL,
    TO_PROGRAM,
    WORKSPACE_FULL_SIGNAL,
)
from harness_kernel.sandbox import IsolationError, Limits, apply


def _raise(exc_type, runner: CellRunner):
    """A handler that raises `exc_type` while the program's code runs (`runner.in_program`)
    and does nothing otherwise: an interrupt that lands as a cell ends (the runner restoring
    names, its done on the way, the next cell awaited) must not end the process or hide what
    the cell did."""

    def handler(_signum, _frame):
        if runner.in_program:
            raise exc_type()

    return handler


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    config = json.loads(argv[0])
    sys.argv = ['harness-program']  # what the program may see of how it was started
    sock = socket.socket(fileno=int(config['channel']))
    channel = Channel(sock, Codec(TO_PROGRAM))
    try:
        report = apply(
            config['workspace'],
            list(config['read']),
            int(config['uid']),
            Limits(**config['limits']),
            int(config['parent']),
        )
    except (IsolationError, OSError) as exc:
        channel.send({'op': 'ready', 'error': str(exc)})
        return 2
    # A program imports the modules it wrote in its workspace, once it cannot harm anything:
    # nothing of the workspace was importable before the sandbox (the spawner runs with -P).
    if sys.path[:1] != [os.getcwd()]:
        sys.path.insert(0, os.getcwd())
    doc_values = dict(config.get('doc_values') or {})
    api = ProgramApi(
        channel,
        ProgramStage(budget_ms=float(doc_values.get('reactive_budget_ms', 20.0))),
        config.get('api'),
        doc_values,
    )

    def flush() -> None:
        sys.stdout.flush()
        sys.stderr.flush()

    # Each line reaches the kernel's pipe as it is printed: a program that crashes the process
    # or is killed at its timeout keeps what it printed before (a pipe's stdout is otherwise
    # flushed only every 8 KB, and stderr is line-buffered already).
    sys.stdout.reconfigure(line_buffering=True)

    runner = CellRunner(api.functions(), flush)
    signal.signal(REACTIVE_TIMEOUT_SIGNAL, _raise(ReactiveTimeout, runner))
    signal.signal(CELL_TIMEOUT_SIGNAL, _raise(CellTimeout, runner))
    signal.signal(WORKSPACE_FULL_SIGNAL, _raise(WorkspaceFull, runner))
    channel.send({'op': 'ready', 'sandbox': asdict(report)})
    while True:
        try:
            message = channel.recv()
        except ChannelClosedError:
            return 0
        if message.get('op') != 'cell':
            return 3
        try:
            outcome = runner.run(str(message.get('code', '')))
        except BaseException as exc:  # a timeout signal that landed outside the program
            outcome = CellOutcome('error', traceback=type(exc).__name__)
            with contextlib.suppress(BaseException):
                outcome.restored = runner.restore()
        with contextlib.suppress(BaseException):  # the program broke its own stdout
            flush()
        channel.send({'op': 'done', 'cell': message.get('cell'), **asdict(outcome)})


if __name__ == '__main__':
    sys.exit(main())
