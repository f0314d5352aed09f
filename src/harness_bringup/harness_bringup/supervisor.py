"""The episode's supervisor: `harness run` runs the episode in a child process (a session of
its own, so that it and every process it starts form one process group) and outlives it.
Whatever ends the child, the run folder ends with a summary.json (status `error` and the
cause when the child could not write one), and no process of the episode outlives it.

The child is a fresh `harness` process (not a fork: a process with threads, as a test runner
or numpy's thread pool, cannot be forked safely), told by SUPERVISED_FOLDER which run folder
to write."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

GRACE_S = 15.0  # after a second Ctrl-C (or a SIGTERM), how long before the group is killed


def _describe(returncode: int) -> tuple[str, int]:
    if returncode < 0:
        return f'killed by {signal.Signals(-returncode).name}', 128 - returncode
    return f'exit code {returncode}', returncode


SUPERVISED_FOLDER = 'HARNESS_SUPERVISED_FOLDER'


def supervised(folder: Path, base: dict, argv: list[str]) -> int:
    """Run `harness argv` as the episode's child process; return its exit code. `base` holds
    the summary fields known before the episode started (task, layout, seed, model)."""
    sys.stdout.flush()
    sys.stderr.flush()
    child = subprocess.Popen(
        [sys.executable, '-m', 'harness_bringup.cli', *argv],
        env=dict(os.environ, **{SUPERVISED_FOLDER: str(folder)}),
        start_new_session=True,
    )
    pid = child.pid
    interrupts = []

    def forward(signum, _frame) -> None:
        interrupts.append((signum, time.monotonic()))
        sig = signal.SIGINT if len(interrupts) == 1 else signal.SIGTERM
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    # The handlers stay until the summary is written: a second Ctrl-C that comes while the
    # supervisor closes the run folder must not end it half-written.
    try:
        try:
            while child.poll() is None:
                if len(interrupts) > 1 and time.monotonic() - interrupts[-1][1] > GRACE_S:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                time.sleep(0.05)
        finally:
            # Whatever the episode left (a kernel, a program process, a recorder) ends with it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        return _close(Path(folder), base, child.returncode, bool(interrupts))
    finally:
        for s, handler in previous.items():
            # After a Ctrl-C the episode is over: one more, pressed while this process exits,
            # must not turn its exit code 130 into a death by SIGINT.
            signal.signal(s, signal.SIG_IGN if interrupts else handler)


def _close(folder: Path, base: dict, returncode: int, interrupted: bool) -> int:
    """The supervisor's exit code; the summary (and the report) written for a child that ended
    without one."""
    how, code = _describe(returncode)
    summary_path = folder / 'summary.json'
    if not summary_path.is_file():
        summary = {
            **base,
            'status': 'interrupted' if interrupted else 'error',
            'detail': (
                f'the episode process ended ({how}) before it wrote its summary'
                + (' after an interrupt' if interrupted else '')
            ),
            'written_by': 'supervisor',
        }
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / 'events.jsonl', 'a') as events:
            events.write(
                json.dumps(
                    {'type': 'end', 'status': summary['status'], 'detail': summary['detail']}
                )
                + '\n'
            )
        summary_path.write_text(json.dumps(summary, indent=2) + '\n')
        print(f'[harness] {summary["detail"]}; the supervisor wrote {summary_path}', flush=True)
        from harness_bringup.run import write_report_safely

        write_report_safely(folder, lambda line: print(f'[harness] {line}', flush=True))
        return 130 if interrupted else 1
    return code
