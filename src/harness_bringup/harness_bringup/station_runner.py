"""The bench's episodes on warm stations (harness_bringup.warm_station): station processes (each
its own ROS domain and process group), as many as the bench runs episodes at a time, each sent
episode after episode.

The stations leave each run folder's last parts (its LeRobot dataset and report.html, which
read its bag) to the bench process, which makes them on a thread of its own while the station
runs the next episode (`drain` waits for them): the bench process is otherwise idle, and on
a 2-core machine they take ~0.07 s of wall time an episode (perf/bench.py).

A station that dies while it serves an episode, or that is killed when its episode passes its
deadline (harness_bringup.episode_deadline: a hung station), is replaced: the episode's run
folder is closed as the supervisor closes one whose process died (summary.json with status
`error` and why, the program's files moved in, report.html), and the episode runs once more, in
a new run folder, on a fresh station; so is one that the station reports broken after an
episode that ended in an `error`. A Ctrl-C to the bench is sent on to the stations' process
groups: the running episodes end as interrupted and write their run folders, as under
`harness run`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import IO

from harness_recording.run_folder import update_summary
from harness_types.process import end_group, exit_words

from harness_bringup.bench import EpisodeJob, run_episode_process
from harness_bringup.console import say
from harness_bringup.episode_deadline import DEADLINE, EpisodeDeadline, hung
from harness_bringup.passes_folder import remove_noted_passes_folder
from harness_bringup.processes import with_numerics_defaults
from harness_bringup.program_workspace import NEXT_PROGRAM_FOLDER, discard_program_folder
from harness_bringup.run import finish_run, finishing_of
from harness_bringup.shared_memory import sweep
from harness_bringup.supervisor import GRACE_S, Interrupts, _close

# Why a station that is otherwise whole is retired after an episode that ended in an `error`
# (warm_station says it): something of the graph may have failed with it, so the episode runs
# again on a new station.
EPISODE_ERROR = 'the episode ended in an error'


def station_failed(
    status: str | None, broken: str, retry: bool, interrupted: bool, died: bool = False
) -> bool:
    """Whether an episode that ended with `status` on a station retired for `broken` was not
    run (`station_failed`, run again): its station `died` before the episode wrote its summary
    (whatever status its end event gave: its outcome was never written), it
    ended in an `error` with a station that failed, or on a first run with one retired for
    that error alone (the graph may have failed with it). An `error` again on the `retry`,
    with a station otherwise whole, is the episode's own, as a station of its own would have
    it; an interrupted episode keeps its status."""
    if interrupted or not broken:
        return False
    if died:
        return True
    if status != 'error':
        return False
    return not (retry and broken.startswith(EPISODE_ERROR))


class StationProcess:
    """One warm station process: `run` an episode on it, `close` it."""

    def __init__(self, folder: Path, env: dict[str, str] | None = None) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.started = time.time()
        self._errors = open(folder / 'station.err', 'a')  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, '-m', 'harness_bringup.warm_station', '--folder', str(folder)],
            env=with_numerics_defaults(os.environ if env is None else env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._errors,
            start_new_session=True,
        )
        self._answers = b''
        self.episodes = 0
        self.killed_for = ''  # why this runner killed it (a hung episode), when it did

    def death(self) -> str:
        code = self.process.poll()
        if code is None:
            return ''
        how = exit_words(code)
        if self.killed_for:
            how = f'{how}: {hung(self.killed_for)}'
        return f'the station process ended ({how}; see {self.folder})'

    def run(
        self,
        argv: list[str],
        run_folder: Path,
        log: Path,
        interrupts: Interrupts,
        before: int,
        deadline: EpisodeDeadline = DEADLINE,
        task: str = '',
    ) -> tuple[int | None, str, tuple[str, ...], float | None]:
        """Run the episode of `harness run` arguments `argv` into `run_folder` (its output to
        `log`); (exit code, '' or why the station can serve no more, what of the run folder is
        left to make: run.finishing, when the station read the request: time.time()), or
        (None, why, (), None) when the station died before it answered, or was killed when the
        episode (of `task`) passed its `deadline` (harness_bringup.episode_deadline). The bench's
        interrupts after the first `before` are sent on."""
        self.episodes += 1
        watch = deadline.watch(run_folder, task)
        request = {'argv': argv, 'folder': str(run_folder), 'log': str(log), 'finish': False}
        try:
            self.process.stdin.write((json.dumps(request) + '\n').encode())
            self.process.stdin.flush()
        except OSError:
            return None, self.death() or 'the station process took no request', (), None
        sent, escalated = before, None
        out = self.process.stdout.fileno()
        while b'\n' not in self._answers:
            for _ in interrupts.times()[sent:]:
                sent += 1
                first = sent == before + 1
                self.signal(signal.SIGINT if first else signal.SIGTERM)
                if not first:
                    escalated = time.monotonic()
            if escalated is not None and time.monotonic() - escalated > GRACE_S:
                self.signal(signal.SIGKILL)
            if not self.killed_for and (killed_for := watch.overdue()):
                self.killed_for = killed_for
                self.signal(signal.SIGKILL)
            ready, _, _ = select.select([out], [], [], 0.05)
            if ready:
                chunk = os.read(out, 65536)
                if not chunk:  # its output ended: it is gone, or going
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        self.process.wait(timeout=5)
                    return None, self.death() or 'the station process closed its answers', (), None
                self._answers += chunk
        line, self._answers = self._answers.split(b'\n', 1)
        answer = json.loads(line)
        left = tuple(p for p in answer.get('finish') or () if p in ('dataset', 'report'))
        return int(answer['code']), str(answer.get('healthy') or ''), left, answer.get('read_at')

    def signal(self, number: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, number)

    def close(self, timeout: float = 30.0) -> None:
        """End the station (its input's end: it leaves the graph in order) and whatever of it
        is left."""
        with contextlib.suppress(OSError):
            self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=timeout)
        end_group(self.process.pid)  # a recorder still closing its bag gets to close it
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        self.process.stdout.close()
        self._errors.close()


class StationRunner:
    """A bench runner (harness_bringup.bench.Runner) on warm stations under `folder`: a
    station serves one episode at a time; a bench thread takes a free one (a new one when
    none is free) and gives it back after its episode, so that the stations of several waves
    of episodes (an expert check's, then the bench's) are the same ones. `close()` ends them.
    A station whose episode passes its `deadline` is killed: it is hung."""

    def __init__(self, folder: Path, deadline: EpisodeDeadline = DEADLINE) -> None:
        self.folder = folder
        self.deadline = deadline
        self._lock = threading.Lock()
        self._free: list[StationProcess] = []
        self._stations: list[StationProcess] = []
        self._count = 0
        self._finisher = ThreadPoolExecutor(max_workers=1, thread_name_prefix='finisher')
        self._finishing: list[Future] = []
        self._summaries = threading.Lock()  # the finisher and the bench threads update them

    def __call__(self, job: EpisodeJob, folder: Path, interrupts: Interrupts) -> dict:
        summary = run_episode_process(job, folder, interrupts, self._supervise)
        failed = summary.get('run_folder')
        if summary.get('status') == 'station_failed' and failed:
            # The station failed, not the episode (or nothing can tell): once more, on a
            # fresh station, in a run folder of its own.
            again = functools.partial(self._supervise, retry=True)
            summary = run_episode_process(job, folder, interrupts, again)
            # what its first run's calls used (the results count the retry alone), and its
            # part of the bench's wall time
            note = {
                'retry_of': str(failed),
                'retry_of_usage': _usage(Path(failed)),
                'retry_of_command_seconds': _summary(Path(failed)).get('command_seconds'),
            }
            if summary.get('run_folder'):
                retry = Path(summary['run_folder'])
                note['retry_of'] = os.path.relpath(failed, retry)
                with self._summaries:
                    update_summary(retry, lambda s: s.update(note))
            summary.update(note)  # (a retry that an interrupt kept from starting has no folder)
        return summary

    def _finish(self, run: Path, parts: tuple[str, ...], log: Path) -> None:
        def said(line: str) -> None:  # the episode's log, closed by its thread by now
            with open(log, 'a') as out:
                say(line, file=out)

        seconds = finish_run(run, parts, said)
        with self._summaries:
            update_summary(run, lambda s: s.update(finished_by_bench_seconds=seconds))

    def drain(self) -> None:
        """Wait until every run folder's last parts are made."""
        with self._lock:
            pending, self._finishing = self._finishing, []
        for future in wait(pending).done:
            if future.exception() is not None:  # a bug: said, and the other runs are made
                say(f'a run folder was not finished: {future.exception()!r}')

    def _take(self, env: dict[str, str] | None) -> tuple[StationProcess, float]:
        """A free station (a new one when none is) and the seconds spent starting it now."""
        with self._lock:
            while self._free:
                station = self._free.pop()
                if not station.death():
                    return station, 0.0
                self._retire(station)
            self._count += 1
            name = f'station-{self._count}'
        started = time.time()
        station = StationProcess(self.folder / name, env)
        with self._lock:
            self._stations.append(station)
        return station, time.time() - started

    def _give_back(self, station: StationProcess) -> None:
        with self._lock:
            self._free.append(station)

    def _retire(self, station: StationProcess) -> None:
        """End a station that can serve no more, and remove the program folder it had
        started for its next episode (its program process is gone with it) and its passes
        folder (a station that was killed left both)."""
        station.close(timeout=5)
        with contextlib.suppress(OSError):
            discard_program_folder(Path((station.folder / NEXT_PROGRAM_FOLDER).read_text().strip()))
        remove_noted_passes_folder(station.folder)

    def _supervise(
        self,
        run: Path,
        base: dict,
        argv: list[str],
        output: IO[str] | None,
        interrupts: Interrupts | None,
        env: dict[str, str] | None,
        retry: bool = False,
    ) -> int:
        """A bench.Supervise: the episode on a free station; a station that died or reports
        itself broken is retired (the next episode starts a new one), and an episode whose
        station died before the episode wrote its summary, or that ended in an `error` with
        it, is `station_failed` (not run: it runs again). Run again
        (`retry`) and ended in an `error` on a station that is otherwise whole, the error is
        the episode's own, as a station of its own would have it: that status stays."""
        seen = interrupts if interrupts is not None else Interrupts()
        before = len(seen.times())

        sweep(lambda line: say(line, file=output))
        asked = time.time()
        station, starting = self._take(env)
        log = Path(getattr(output, 'name', None) or run.parent / 'harness.log')
        if output is not None:
            output.flush()
        task = str(base.get('task') or '')
        code, broken, left, read_at = station.run(argv, run, log, seen, before, self.deadline, task)
        answered = time.time()
        if read_at is not None:  # a new station read it once its Python had started
            starting = max(starting, read_at - asked)
        interrupted = len(seen.times()) > before
        left = parts_left(run, left, broken if interrupted else '')
        died = False  # before the episode wrote its own summary (its outcome)
        if code is None:
            died = not (run / 'summary.json').is_file()
            station.close(timeout=5)
            returncode = station.process.returncode or 1
            code = _close(run, base, returncode, interrupted, output, station.killed_for)
            if not died:  # after its summary: the parts the bench makes are still to make
                left = finishing_of(run)
        elif not (run / 'summary.json').is_file():
            # refused before it ran (bad arguments), or interrupted while the graph started:
            # the run folder says so, as the supervisor of harness run writes it
            _close(run, base, code, interrupted, output)
        which = (station.folder.name, station.episodes)  # (before another takes it)
        if broken == 'interrupted' and not interrupted:
            # Signalled from outside the bench (a SIGTERM or SIGINT to the station alone): the
            # station failed under the episode, which the user did not interrupt.
            broken = 'the station process was interrupted by a signal the bench did not send'
            died = True
        if broken:
            if not interrupted:  # (an interrupted bench starts no next episode)
                say(f'{broken}: the station is retired (a later episode starts a new one)')
            self._retire(station)
            if station_failed(_summary(run).get('status'), broken, retry, interrupted, died):
                with self._summaries:
                    update_summary(
                        run, lambda s: s.update(status='station_failed', station_failed=broken)
                    )
        else:
            self._give_back(station)
        with self._summaries:  # (after a broken station's close, which the episode waited for)
            _account(run, asked, starting, answered, *which)
        if left:  # (its report shows the accounting)
            with self._lock:
                self._finishing.append(self._finisher.submit(self._finish, run, left, log))
        if interrupted:
            return 130 if code == 0 else code
        return code

    def close(self) -> None:
        self.drain()
        self._finisher.shutdown(wait=True)
        with self._lock:
            stations, self._stations, self._free = self._stations, [], []
        for station in stations:
            station.close()
        # what stations ended by a signal while they started left in /dev/shm (the sweep before
        # each episode finds them only in a later bench)
        sweep(say)


def parts_left(run: Path, said: tuple[str, ...], broken: str) -> tuple[str, ...]:
    """The parts of the run folder the bench makes: those the station `said`, or, where the
    bench's Ctrl-C (`broken` 'interrupted'; '' for any other) reached the station between its
    episode's summary and its answer (it could not say them: an episode that ended whole
    lacked its report and dataset), what the run's configuration asks."""
    if said or broken != 'interrupted' or not (run / 'summary.json').is_file():
        return said
    return finishing_of(run)


def _summary(run: Path) -> dict:
    """The run's summary.json ({} when it has none that can be read)."""
    try:
        return json.loads((run / 'summary.json').read_text())
    except (OSError, ValueError):
        return {}


def _usage(run: Path) -> dict:
    """What the calls of the run in `run` used, from its summary ({} when it has none)."""
    summary = _summary(run)
    keys = ('model_calls', 'verifier_calls', 'tokens', 'cost_usd')
    return {k: summary[k] for k in keys if k in summary}


def _account(
    run: Path, asked: float, starting: float, answered: float, station: str, episodes: int
) -> None:
    """The episode's part of the bench's wall time in summary.json (`command_seconds`), in the
    phases a supervised episode has: the station's start (`starting`: until the station read
    the request; a new station's process start and imports, ~0 on a warm one), the episode in
    the station (`episode_process`: from then to its answer; its own phases are in
    `episode_process_seconds`, a new station's graph start among them, and what they leave is
    `episode_process_exit`) and after it (a broken station's close among it); `started_at` and
    `ended_at` (the station's answer) place it in the bench's wall time. `station`: the
    station's name, `episodes`: how many it had served with this one."""
    now = time.time()

    def add(summary: dict) -> None:
        inside = summary.get('episode_process_seconds') or {}
        episode = answered - asked - starting
        summary['command_seconds'] = {
            'station_start': round(starting, 3),
            'episode_process': round(episode, 3),
            'episode_process_exit': round(episode - sum(inside.values()), 3) if inside else None,
            'after_episode_process': round(now - answered, 3),
            'total': round(now - asked, 3),
            'started_at': round(asked, 3),
            'ended_at': round(answered, 3),
            'station': station,
            'station_episode': episodes,
        }

    update_summary(run, add)
