"""A warm station: one graph (worker, skill server, driver node, kernel process, recorder) that
serves episode after episode, so that a bench or a demonstration collection pays the graph's
start once, not once per episode.

Between two episodes the world is reset (the worker's reset, as every episode's), the driver
publishes the new episode's events on publishers of its own, the kernel makes a new kernel core
(its perception's tracker, grips and log), and the program runs in a fresh sandboxed program
process, started while the last episode ended (`prepare`), in a folder of its own whose files
move into the episode's run folder. Each episode writes its complete run folder (summary,
events, kernel.log, ticks, bag) as `harness run` writes it.

The station process (`python -m harness_bringup.warm_station --folder DIR`) reads one JSON
line per episode on its standard input: `{"argv": [harness run's arguments], "folder": the run
folder, "log": where the episode's output goes, "finish": false when the asker makes the
run's dataset and report itself}`, runs it, and answers on its standard output `{"code": the
exit code harness run would give, "healthy": "" or why the station can serve no more,
"finish": what of the run folder is left to make}`; it ends at its input's end. Its output
between episodes goes to DIR/station.log, the kernel's and the recorder's to DIR.
`harness_bringup.station_runner` starts, feeds and replaces station processes for the bench.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from harness_driver.driver_node import GraphError
from harness_recording.recording_notes import RECORDER_OUTPUT, judge_recording, recorder_report
from harness_types.config import DriverConfig, GraphConfig
from harness_types.process import process_stopped

from harness_bringup.console import one_line
from harness_bringup.episode_graph import EpisodeGraph, recorder_subscriptions
from harness_bringup.kernel_process import KernelProcess, KernelStartError
from harness_bringup.passes_folder import note_passes_folder
from harness_bringup.processes import child_environment, wait_or_kill
from harness_bringup.program_workspace import (
    NEXT_PROGRAM_FOLDER,
    collect_program_workspace,
    discard_program_folder,
    new_program_workspace,
    note_program_workspace,
)
from harness_bringup.station_graph import StationGraph

RECORDER_OPEN_S = 20.0  # how long an episode waits for the recorder to open its bag


def station_key(config: GraphConfig) -> GraphConfig:
    """What a station's graph was started with and every episode it serves must share: every
    node's parameters, and of the driver's (which the episode reads in this process) what its
    recorder records."""
    d = config.driver
    driver = type(d)(record_bag=d.record_bag, recording=d.recording)
    return replace(config, driver=driver, operator=type(config.operator)(), path=None)


class WarmGraph(EpisodeGraph):
    """`with WarmGraph(params, folder, record) as g:` starts the graph once; each episode then
    runs on it (`run.run_episode(..., warm=g)`): `begin_episode`, the episode's own calls
    (start_kernel ... stop_recording), and the graph stays for the next. `folder`: where the
    kernel's and the recorder's output goes between episodes; `record`: whether episodes are
    recorded (driver.record_bag); `lean`: a lean recording (driver.recording)."""

    def __init__(self, params: Path, folder: Path, record: bool, lean: bool = False) -> None:
        super().__init__(params, bag=None, lean=lean)
        self.folder = folder
        self.record = record
        self.workspace: Path | None = None  # the running episode's (its run folder's)
        self._ahead: Path | None = None  # the next episode's program folder, prepared
        self._recorder_log = None
        self.episodes = 0
        self.refusal = ''  # why the kernel serves no other episode, when it said so

    def __enter__(self) -> WarmGraph:
        super().__enter__()
        self._station_notes = dict(self.notes)
        try:
            note_passes_folder(self.folder, self.passes)
            self.kernel = KernelProcess(
                self.driver.run_cell_client,
                self.domain_id,
                None,
                self.folder / 'kernel.log',
                ['--params-file', str(self.params)],
                warm=True,
                passes=self.passes,
            )
            self.kernel.launch()
            if self.record:
                self._launch_recorder()
            self.kernel.wait_ready()
            self._prepare_next()
        except (KernelStartError, OSError) as exc:
            self.__exit__()
            raise GraphError(f'the warm station did not start: {exc}') from None
        return self

    # Between episodes ---------------------------------------------------------------------

    def health(self) -> str:
        """'' while the station can serve another episode; otherwise why not."""
        if self.kernel is None:
            return 'no kernel is running'
        why = self.kernel.death() or self.refusal
        if why:
            return why
        if self.record and (self.recorder is None or self.recorder.poll() is not None):
            return f'the recorder ended (see {self.folder / RECORDER_OUTPUT})'
        return ''

    def begin_episode(self, bag: Path | None, driver: DriverConfig | None = None) -> None:
        """A new episode starts on this graph; `bag` where it is recorded (None: not): no
        execution of the last episode runs on, the driver's publishers of events and model
        images are new (those of the last episode gone), the recorder records into `bag`
        before the episode's first event is published on them, and the driver node's
        parameters show `driver`, the episode's own section."""
        why = self.health()
        if why:
            raise GraphError(f'the warm station cannot serve: {why}')
        if (bag is not None) != self.record:
            raise GraphError('this station was started with the other driver.record_bag')
        if not self.skills.between_episodes():
            raise GraphError('an execution of the last episode did not end')
        self.episodes += 1
        self.notes = dict(self._station_notes)
        # The last episode's publishers go first: a recorder that joined after they published
        # (one replaced for being slow) is given their kept history (that episode's events, its
        # end among them) as it matches them, and a bag already open would record it.
        self.driver.begin_episode(driver)
        self.bag = bag
        if bag is not None:
            self._open_bag(bag)
            self._wait_bag_open(bag)
            # The reset (before the kernel's begin in harness mcp) publishes the episode's first
            # state: the worker's topics reach the recorder first (at once, but on a fresh
            # station). The events' publisher is new: start_kernel waits for it.
            mine = [(n, p) for n, p in self._recorded_publishers() if n is self.worker]
            self.wait_matched(mine, time.monotonic() + RECORDER_OPEN_S)

    def _prepare_next(self) -> None:
        """The next episode's program process starts now, in a folder of its own (noted in
        the station's folder, so that whoever replaces a killed station removes it)."""
        self._ahead = new_program_workspace(None)
        (self.folder / NEXT_PROGRAM_FOLDER).write_text(f'{self._ahead}\n')
        reply = self.kernel.request('prepare', workspace=str(self._ahead))
        if not reply.get('ok'):
            raise KernelStartError(f'the kernel could not prepare a program: {reply.get("error")}')

    def start_kernel(self, workspace: Path, log: Path) -> None:
        self.workspace = workspace
        if self._ahead is None:
            try:
                self._prepare_next()
            except KernelStartError as exc:
                raise GraphError(str(exc)) from None
        self.program_workspace, self._ahead = self._ahead, None
        note_program_workspace(workspace, self.program_workspace)
        try:
            reply = self.kernel.request(
                'begin', workspace=str(self.program_workspace), log=str(log)
            )
        except KernelStartError as exc:
            raise GraphError(str(exc)) from None
        if not reply.get('ok'):
            raise GraphError(f'the kernel could not begin the episode: {reply.get("error")}')
        if self.bag is not None:
            try:
                self.wait_recorder(self.bag)
            except GraphError as exc:  # an episode without a bag beats no episode
                self.notes['bag_error'] = str(exc)

    def stop_kernel(self) -> None:
        """The episode's program process ends and its files move into the run folder; the
        next episode's starts (a kernel that does not answer is noted; health() then says it
        is gone, and the station is replaced)."""
        if self.workspace is None:
            return
        ended = False
        # A cell the driver no longer waits for may wait on an execution: it ends at its next
        # tick, so that the kernel's end finds the cell returned (between_episodes releases
        # the stop before the next episode).
        self.skills.end_executions()
        try:
            if not self.kernel.death():
                reply = self.kernel.request('end')
                ended = bool(reply.get('ok'))
                if not ended:  # a cell still runs: no other program process in this kernel
                    self.refusal = f'the kernel ended its episode badly: {reply.get("error")}'
                    self.notes['kernel_error'] = self.refusal
        except KernelStartError as exc:
            self.notes['kernel_error'] = str(exc)
        finally:
            collect_program_workspace(self.workspace)
            self.workspace = None
        if ended:
            with contextlib.suppress(KernelStartError):
                self._prepare_next()

    # The recorder ---------------------------------------------------------------------------

    def _launch_recorder(self) -> None:
        command = [sys.executable, '-m', 'harness_recording.recorder_node', '--episodes']
        if self.lean:
            command.append('--lean')
        self._recorder_log = open(self.folder / RECORDER_OUTPUT, 'a')  # noqa: SIM115
        self.recorder = subprocess.Popen(
            command,
            env=child_environment(self.domain_id),
            stdin=subprocess.PIPE,
            stdout=self._recorder_log,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def _open_bag(self, bag: Path) -> None:
        """Ask the recorder to record into `bag` from now until the episode's end event."""
        if '\n' in str(bag):
            raise GraphError(f'a bag path with a line break cannot be recorded into: {bag!r}')
        out = bag.with_name(RECORDER_OUTPUT)
        with contextlib.suppress(OSError):
            out.unlink()
        self.note_bag_opened()
        try:
            self.recorder.stdin.write(f'{bag}\n')
            self.recorder.stdin.flush()
        except (OSError, ValueError) as exc:
            raise GraphError(f'the recorder takes no bag: {exc}') from None

    def _wait_bag_open(self, bag: Path, timeout: float = RECORDER_OPEN_S) -> None:
        """Wait until the recorder opened `bag` (GraphError when it cannot: the station is
        then replaced, as its recorder is what fails)."""
        out = bag.with_name(RECORDER_OUTPUT)
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(OSError):
                text = out.read_text()
                if text.startswith('recording'):
                    return
                if text.strip():
                    raise GraphError(f'the recorder did not open the bag: {text.strip()[:300]}')
            if self.recorder.poll() is not None or time.monotonic() > deadline:
                raise GraphError(f'the recorder did not open the bag (see {out})')
            time.sleep(0.005)

    def stop_recording(self, timeout: float = 15.0) -> dict:
        """Wait for the recorder to close the episode's bag after its `end` event (it stays
        for the next); one that does not is replaced."""
        if self.bag is None or self.recorder is None:
            return {}
        out = self.bag.with_name(RECORDER_OUTPUT)
        deadline = time.monotonic() + timeout
        complete = True
        while recorder_report(out) is None:
            gone = self.recorder.poll() is not None or process_stopped(self.recorder.pid)
            if gone or time.monotonic() > deadline:
                complete = False
                break
            time.sleep(0.005)
        code = None
        if not complete:  # replaced; stopped first, it closes the bag it holds
            replaced = recorder_subscriptions(self._recorded_publishers())
            self._replaced_recorders = self._replaced_recorders | replaced
            code = self._end_recorder(stop=True)
            self._launch_recorder()
        report = recorder_report(out)
        notes = judge_recording(self.notes, report, complete, code, self.published_into_bag())
        self.bag = None
        return notes

    def _end_recorder(self, stop: bool = False) -> int | None:
        """End the recorder (its input's end: it leaves the graph in order); `stop`: at once,
        with SIGTERM (SIGKILL when it is stopped by a signal, or does not end). Its exit code."""
        if self.recorder is None:
            return None
        with contextlib.suppress(OSError, ValueError):
            self.recorder.stdin.close()
        if stop and self.recorder.poll() is None:
            if process_stopped(self.recorder.pid):
                self.recorder.kill()
            else:
                self.recorder.terminate()
        wait_or_kill(self.recorder, 10)
        code, self.recorder = self.recorder.returncode, None
        if self._recorder_log is not None:
            self._recorder_log.close()
            self._recorder_log = None
        return code

    def __exit__(self, *exc) -> None:
        if self.kernel is not None:
            self.kernel.stop(wait_gone=False)
            self.kernel = None
        if self.workspace is not None:
            collect_program_workspace(self.workspace)
            self.workspace = None
        if self._ahead is not None:
            discard_program_folder(self._ahead)
            self._ahead = None
        self._end_recorder()
        self._remove_passes()
        StationGraph.__exit__(self, *exc)


# The station process ------------------------------------------------------------------------


def _said(line: str) -> None:
    """An episode's progress line, into its output (one line, whatever a model or a program
    wrote into it)."""
    print(one_line(line), flush=True)


def _output_to(path: Path | None, station_log: int) -> None:
    """This process's output (file descriptors 1 and 2) to `path` (None: the station's log)."""
    sys.stdout.flush()
    sys.stderr.flush()
    if path is None:
        os.dup2(station_log, 1)
        os.dup2(station_log, 2)
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


class Station:
    """The station process's side: its graph (started at the first episode, again when an
    episode needs other node parameters) and how it runs one request."""

    def __init__(self, folder: Path) -> None:
        from harness_bringup.cli import build_parser

        self.folder = folder
        self.graph: WarmGraph | None = None
        self.key: GraphConfig | None = None
        self.parser = build_parser()

    def episode(self, request: dict, arrived: float) -> tuple[int, str, tuple[str, ...]]:
        """Run one request's episode: (harness run's exit code, '' or why this station can
        serve no more, what of its run folder is left to make: run.finishing)."""
        from harness_driver.models import ModelError
        from harness_types.config import ConfigError

        from harness_bringup.console import fail
        from harness_bringup.run import GraphOptions, UsageError, finishing, run_episode
        from harness_bringup.run_command import episode_exit_code, prepare_run, probe_models
        from harness_bringup.settings import _not_started

        try:
            args = self.parser.parse_args(request['argv'])
        except SystemExit as exc:  # argparse said what was wrong, on this episode's output
            return (exc.code if isinstance(exc.code, int) else 2), '', ()
        if args.command != 'run':
            refused = f'a warm station runs `harness run` episodes, not {args.command!r}'
            return fail(refused), '', ()
        if args.attach or args.foxglove is not None:
            return (
                fail(
                    'a warm station runs its own graph: --attach and --foxglove are for harness run'
                ),
                '',
                (),
            )
        args.argv = request['argv']
        run_folder = Path(request['folder'])
        try:
            config, prepared, base = prepare_run(args, supervised=True)
        except (FileNotFoundError, ConfigError, UsageError) as exc:
            return fail(str(exc)), '', ()
        try:
            probe_models(prepared)
        except ModelError as exc:  # the model service does not answer: not run, as harness run
            return _not_started(run_folder, base, str(exc), 'model_service_failed'), '', ()
        # The run's configuration before the graph (re)starts, as harness run has it before its
        # graph: an episode interrupted meanwhile is closed as its recording level says.
        run_folder.mkdir(parents=True, exist_ok=True)
        config.write(run_folder / 'params.yaml')
        starting = time.monotonic()
        graph = self._graph(config)
        started = time.monotonic() - starting  # 0 unless this episode waited for the graph
        finish = bool(request.get('finish', True))
        result = run_episode(
            prepared, run_folder, _said, GraphOptions(), graph, arrived + started, finish
        )
        if started > 0.01:  # this episode's wait for the station's graph, a phase of its own
            from harness_recording.run_folder import update_summary

            def add(summary: dict) -> None:
                phases = summary.setdefault('episode_process_seconds', {})
                phases['station_graph_start'] = round(started, 3)

            update_summary(run_folder, add)
        code = episode_exit_code(result, run_folder)
        left = () if finish else finishing(config)
        if code == 130:
            return code, 'interrupted', left
        broken = graph.health()
        if not broken and result.summary.get('status') == 'error' and not result.setup_error:
            # Something of the graph may have failed with it (a service that timed out, the
            # renderer): the next episode gets a fresh station, and this one runs again there.
            from harness_bringup.station_runner import EPISODE_ERROR  # (the bench's module)

            broken = f'{EPISODE_ERROR} ({result.summary.get("detail", "")[:200]})'
        return code, broken, left

    def _graph(self, config: GraphConfig) -> WarmGraph:
        """The graph for `config`'s node parameters (GraphError when it does not start)."""
        if self.graph is not None and station_key(config) != self.key:
            print('[station] other node parameters: the graph starts again', flush=True)
            self.close()
        if self.graph is None:
            params = config.write(self.folder / 'params.yaml')
            d = config.driver
            graph = WarmGraph(params, self.folder, d.record_bag, d.recording == 'lean')
            graph.__enter__()
            self.graph, self.key = graph, station_key(config)
        return self.graph

    def close(self) -> None:
        if self.graph is not None:
            self.graph.__exit__()
            self.graph = None


def serve(folder: Path, requests, answers) -> int:
    """Serve the episodes `requests` (lines) asks for, answering each on `answers`, until the
    requests end (0) or the station can serve no more (1)."""
    station_log = os.open(folder / 'station.log', os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    _output_to(None, station_log)
    station = Station(folder)
    try:
        for line in requests:
            if not line.strip():
                continue
            arrived, read_at = time.monotonic(), time.time()
            request = json.loads(line)
            _output_to(Path(request['log']) if request.get('log') else None, station_log)
            left: tuple[str, ...] = ()
            try:
                code, healthy, left = station.episode(request, arrived)
            except KeyboardInterrupt:
                code, healthy = 130, 'interrupted'
            except GraphError as exc:
                code, healthy = 1, f'the graph did not start: {exc}'
            except Exception as exc:  # a bug: said, and this station serves no more
                code, healthy = 1, f'the station failed: {type(exc).__name__}: {exc}'
                print(f'[station] {healthy}', flush=True)
            _output_to(None, station_log)
            answer = {'code': code, 'healthy': healthy, 'finish': left, 'read_at': read_at}
            answers.write(json.dumps(answer) + '\n')
            answers.flush()
            if healthy:
                return 1
        return 0
    finally:
        station.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog='warm_station',
        description='Serve episodes on one graph: one JSON request per line of standard input, '
        'one answer per line of standard output.',
    )
    parser.add_argument('--folder', required=True, type=Path, help="the station's own files")
    args = parser.parse_args(argv)
    args.folder.mkdir(parents=True, exist_ok=True)
    # The answers keep standard output; anything printed goes to the station's log instead.
    answers = os.fdopen(os.dup(1), 'w')
    from harness_bringup.processes import use_wheels_ament_prefix

    use_wheels_ament_prefix()
    # A Ctrl-C reaches the station's process group: the running episode ends as interrupted
    # and writes its run folder; a SIGTERM does the same. Set, not inherited: a bench that a
    # script started in the background has SIGINT ignored, and would pass that on.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    code = serve(args.folder, sys.stdin, answers)
    from harness_types.process import leave

    leave(code)
    return code


if __name__ == '__main__':
    main()
