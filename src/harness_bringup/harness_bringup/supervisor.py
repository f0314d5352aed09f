"""The episode's supervisor: `harness run` runs the episode in a child process (a session of
its own, so that it and every process it starts form one process group) and outlives it.
Whatever ends the child, the run folder ends with a summary.json (status `error` and the
cause when the child could not write one), and no process of the episode outlives it; a child
that runs past its deadline (harness_bringup.episode_deadline) is killed as hung. What
killed processes of earlier episodes left in /dev/shm is removed before each episode starts
(harness_bringup.shared_memory).

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
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from harness_types.process import (
    INVOKED_NS,
    SET_UP_NS,
    end_group,
    exit_words,
    process_age_s,
    wrapper_time,
)

from harness_bringup.console import say
from harness_bringup.episode_deadline import DEADLINE, EpisodeDeadline, hung
from harness_bringup.processes import with_numerics_defaults
from harness_bringup.program_workspace import collect_program_workspace
from harness_bringup.shared_memory import sweep

GRACE_S = 15.0  # after a second Ctrl-C (or a SIGTERM), how long before the group is killed


def _describe(returncode: int) -> tuple[str, int]:
    return exit_words(returncode), (128 - returncode if returncode < 0 else returncode)


SUPERVISED_FOLDER = 'HARNESS_SUPERVISED_FOLDER'


class Interrupts:
    """The Ctrl-Cs (and SIGTERMs) a supervising process has seen, when it supervises from
    threads that cannot install signal handlers (the bench): each supervised episode is sent
    them as `supervised` sends its own."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # a signal handler may add while its thread reads
        self._times: list[float] = []

    def add(self) -> None:
        with self._lock:
            self._times.append(time.monotonic())

    def times(self) -> list[float]:
        with self._lock:
            return list(self._times)


def supervised(
    folder: Path,
    base: dict,
    argv: list[str],
    output: IO[str] | None = None,
    interrupts: Interrupts | None = None,
    env: dict[str, str] | None = None,
    since: float | None = None,
    deadline: EpisodeDeadline = DEADLINE,
) -> int:
    """Run `harness argv` as the episode's child process; return its exit code. `base` holds
    the summary fields known before the episode started (task, layout, seed, model). The
    child's output goes to `output` (default: this process's). Without `interrupts` this
    process's SIGINT and SIGTERM are caught (on the main thread) and sent on; with them (a
    thread of the bench), the interrupts the caller records are. `env`: the child's
    environment (default this process's). `since` (time.time()): where this episode's part of
    the command began, when it is not the command's start (a second episode of one command).
    A child past its `deadline` (harness_bringup.episode_deadline) is killed as hung."""
    # Signals can be caught on the main thread only; elsewhere nothing is caught.
    own = interrupts is None and threading.current_thread() is threading.main_thread()
    seen = interrupts if interrupts is not None else Interrupts()

    def record(_signum, _frame) -> None:  # passed on by the loop below, within 50 ms
        seen.add()

    # The handlers come before the child, so no Ctrl-C can leave it unsupervised, and stay
    # until the summary is written, so that one that comes while the supervisor closes the
    # run folder does not end it half-written.
    previous = {s: signal.signal(s, record) for s in (signal.SIGINT, signal.SIGTERM)} if own else {}
    before = len(seen.times())  # a bench's interrupts from before this episode are not its
    try:
        sweep(lambda line: say(line, file=output))
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        spawned = time.time()
        child = subprocess.Popen(
            [sys.executable, '-m', 'harness_bringup.cli', *argv],
            env={
                **with_numerics_defaults(os.environ if env is None else env),
                SUPERVISED_FOLDER: str(folder),
            },
            start_new_session=True,
            stdout=output,
            stderr=subprocess.STDOUT if output is not None else None,
        )
        pid, sent, escalated = child.pid, before, None  # escalated: when SIGTERM was sent
        watch, killed_for = deadline.watch(Path(folder), str(base.get('task') or '')), ''

        def send_new() -> None:
            nonlocal sent, escalated
            for _ in seen.times()[sent:]:
                sent += 1
                first = sent == before + 1
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGINT if first else signal.SIGTERM)
                if not first:
                    escalated = time.monotonic()

        try:
            while child.poll() is None:
                send_new()
                if escalated is not None and time.monotonic() - escalated > GRACE_S:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                if not killed_for and (killed_for := watch.overdue()):
                    say(hung(killed_for), file=output)
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, signal.SIGKILL)
                time.sleep(0.05)
        finally:
            # Whatever the episode left (a kernel, a program process, a recorder) ends with it.
            end_group(pid)
        interrupted = len(seen.times()) > before
        exited = time.time()
        had_summary = (Path(folder) / 'summary.json').is_file()
        code = _close(Path(folder), base, child.returncode, interrupted, output, killed_for)
        if killed_for and had_summary:  # killed while it made its dataset or report
            _finish_killed(Path(folder), output)
        _account(Path(folder), spawned, exited, own and since is None, since)
        # An interrupt that came once the episode had ended still ends this process as one, as
        # does a second one, whose SIGTERM (sent on by this process) ended the episode process
        # while it closed (its code 143 would say a stranger's signal killed it).
        return 130 if interrupted and (code == 0 or escalated is not None) else code
    finally:
        for s, handler in previous.items():
            # After a Ctrl-C the episode is over: one more, pressed while this process exits,
            # must not turn its exit code 130 into a death by SIGINT. (A handler that does
            # nothing, not SIG_IGN: processes started later would inherit that.)
            signal.signal(s, _ignore if len(seen.times()) > before else handler)


def _account(
    folder: Path, spawned: float, exited: float, own_process: bool, since: float | None = None
) -> None:
    """The user's whole wait in summary.json (`command_seconds`), by phase: before this process
    (the `harness` wrapper's set-up check and Python's start, when the wrapper said when it
    started), this process until the episode's, the episode process (its own phases are in
    `episode_process_seconds`), and after it; `started_at` and `ended_at` (time.time()) place
    the episode process in a bench's wall time. In a bench (not `own_process`) the command is
    the bench's: its start is not this episode's. A summary that cannot be read is left as
    it is."""
    now = time.time()
    invoked, set_up = wrapper_time(INVOKED_NS), wrapper_time(SET_UP_NS)
    python_started = set_up if set_up is not None else now - process_age_s()
    if not own_process:  # a bench's episode, or a command's second one
        invoked, set_up, python_started = None, None, since if since is not None else spawned
    episode = exited - spawned

    def add(summary: dict) -> None:
        inside = summary.get('episode_process_seconds') or {}
        parts = {
            # the wrapper's set-up check (tools/setup.sh: seconds when nothing changed)
            'set_up_check': round(set_up - invoked, 3) if invoked and set_up else None,
            # Python's start, the command's imports and its checks of the inputs
            'harness_process_start': round(spawned - python_started, 3),
            'episode_process': round(episode, 3),
            # of it, what its own phases (episode_process_seconds) leave: its exit
            'episode_process_exit': round(episode - sum(inside.values()), 3) if inside else None,
            'after_episode_process': round(now - exited, 3),
        }
        parts['total'] = round(now - (invoked or python_started), 3)
        parts['started_at'], parts['ended_at'] = round(spawned, 3), round(exited, 3)
        summary['command_seconds'] = parts

    from harness_recording.run_folder import update_summary

    update_summary(folder, add)


def _ignore(_signum, _frame) -> None:
    """A signal handler that does nothing."""


def _bag_notes(folder: Path) -> dict:
    """What became of the bag of an episode process that wrote no summary: its recorder,
    ended by the process's death or by end_group's SIGTERM, says in recorder.out whether it
    closed the bag and whether the episode's end event is in it. Nothing without a bag."""
    from harness_recording.recording_notes import RECORDER_OUTPUT, judge_recording, recorder_report
    from harness_recording.run_folder import BAG

    if not (folder / BAG).is_dir():
        return {}
    return judge_recording({'bag': BAG}, recorder_report(folder / RECORDER_OUTPUT), True)


def _recorded_lean(folder: Path) -> bool:
    """Whether the run's params.yaml says it recorded lean (driver.recording); False when it
    has none that can be read (the episode process died before it wrote one)."""
    from harness_types.config import load_config

    try:
        return load_config(folder / 'params.yaml').driver.recording == 'lean'
    except Exception:  # whatever is wrong with it, the report is made as for a full recording
        return False


def _append_end(folder: Path, summary: dict) -> None:
    """The end event of `summary`'s status and detail, as the last line of the run's events
    (a line the death cut short is ended first: the end event is a line of its own)."""
    end = {'type': 'end', 'status': summary['status'], 'detail': summary['detail']}
    with open(folder / 'events.jsonl', 'ab+') as out:  # appends, wherever it last read
        size = out.seek(0, os.SEEK_END)
        if size:
            out.seek(size - 1)
        cut = size > 0 and out.read(1) != b'\n'
        out.write(b'\n' * cut + json.dumps(end).encode() + b'\n')


def close_abandoned(folder: Path, died: str, say: Callable[[str], None]) -> None:
    """Close the run folder of a process that died with no supervisor left to close it (a
    `harness mcp` server killed with SIGKILL: its next server on the journal finds it): the
    program's files moved in, the summary it last wrote kept with the status `error` and
    `died` as the detail, the end event, what became of the bag, the report."""
    from harness_recording.run_folder import WORKSPACE, write_summary

    try:
        collect_program_workspace(folder / WORKSPACE)
    except OSError as exc:
        say(f"the program's files of {folder} were not moved in: {exc}")
    try:
        summary = json.loads((folder / 'summary.json').read_text())
    except (OSError, ValueError, RecursionError):
        summary = None
    summary = summary if isinstance(summary, dict) else {}
    summary |= {'status': 'error', 'detail': died, 'written_by': 'supervisor'}
    summary |= _bag_notes(folder)
    _append_end(folder, summary)
    write_summary(folder, summary)
    say(f'{died}: closed {folder}')
    if not _recorded_lean(folder):
        from harness_bringup.run import write_report_safely

        write_report_safely(folder, say)


def _finish_killed(folder: Path, output: IO[str] | None) -> None:
    """Make the last parts of the run folder of an episode process killed after its summary
    (it was making them: each is made whole again)."""
    from harness_bringup.run import finish_run, finishing_of

    def said(line: str) -> None:
        say(line, file=output)

    parts = finishing_of(folder)
    if parts:
        said(f"making its run folder's {' and '.join(parts)} (again: it may have been cut short)")
        finish_run(folder, parts, said)


def _close(
    folder: Path,
    base: dict,
    returncode: int,
    interrupted: bool,
    output: IO[str] | None = None,
    killed_for: str = '',
) -> int:
    """The supervisor's exit code; the summary (and the report) written for a child that ended
    without one (`killed_for`: why the supervisor killed it, when it did)."""
    how, code = _describe(returncode)
    if killed_for:
        how = f'{how}: {hung(killed_for)}'
    # What the program wrote stays with the run even when the episode process was killed
    # before it moved it in (then also no folder of it is left in the temporary directory).
    from harness_recording.run_folder import WORKSPACE

    try:
        collect_program_workspace(folder / WORKSPACE)
    except OSError as exc:
        say(f"the program's files were not moved in: {exc}", file=output)
    summary_path = folder / 'summary.json'
    if not summary_path.is_file():
        from harness_driver.budgets import usage_of_events
        from harness_recording.run_folder import read_events

        died = f'the episode process ended ({how}) before it wrote its summary'
        events = read_events(folder)
        ended = [e for e in events[-1:] if e.get('type') == 'end']
        summary = {
            **base,
            'status': 'interrupted' if interrupted else 'error',
            'detail': died + (' after an interrupt' if interrupted else ''),
            'written_by': 'supervisor',
            # what its calls used (and cost) is in its events: the tables count it
            **usage_of_events(events),
        }
        if ended:  # it had ended the episode: its own end stays the last event, and says how
            summary['status'] = str(ended[0].get('status') or summary['status'])
            summary['detail'] = f'{ended[0].get("detail") or summary["status"]}; then {died}'
        summary |= _bag_notes(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if not ended:
            _append_end(folder, summary)
        from harness_recording.run_folder import write_summary

        write_summary(folder, summary)
        say(f'{summary["detail"]}; the supervisor wrote {summary_path}', file=output)
        if not _recorded_lean(folder):  # (a lean run's report: `harness report RUN`)
            from harness_bringup.run import write_report_safely

            write_report_safely(folder, lambda line: say(line, file=output))
        return 130 if interrupted else 1
    if killed_for:  # after it wrote its summary: that says so
        from harness_recording.run_folder import update_summary

        update_summary(folder, lambda s: s.update(killed_as_hung=hung(killed_for)))
    return code
