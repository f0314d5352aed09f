"""`harness mcp`: the agent operator's MCP server over a live station. Composes the episode's
graph (worker, skill server, the kernel in its own process, the recorder), the verifier's eyes,
the journal and the session, serves the tools over stdio (or streamable HTTP), and at the end
closes the run folder as an episode's: the end event, the ground truth, the bag, summary.json,
the trials as a LeRobot dataset and report.html."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness_bench.layout import layout_name
from harness_bench.randomization import axes_name
from harness_bench.tasks import TASKS
from harness_types.config import GraphConfig

if TYPE_CHECKING:
    from harness_operator.session import SessionSpec


@dataclass(frozen=True)
class McpOptions:
    task: str
    layout: int
    seed: int
    out: Path
    journal: Path | None = None  # None: <out>/<task>-l<layout>-s<seed>[-r<axes>].journal.jsonl
    new: bool = False  # start a fresh journal (the old one is kept, renamed)
    http_port: int | None = None  # None: stdio
    host: str = '127.0.0.1'
    randomize: tuple[str, ...] = ()  # scene randomisation axes (harness_bench.randomization)

    def spec(self, action_timeout_s: float = 120.0) -> SessionSpec:
        """The operator session these options ask for (its goal is what the journal is for)."""
        from harness_operator.session import SessionSpec

        return SessionSpec(self.task, self.layout, self.seed, action_timeout_s, self.randomize)


@contextlib.contextmanager
def protocol_stdout() -> Iterator[Callable[[], contextlib.AbstractContextManager]]:
    """Send file descriptor 1 to standard error for the block; within `serving()` it is the
    protocol's again (the stdio transport takes it at once). Children started outside it write
    to standard error, and so does anything printed after the server stopped."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)

    @contextlib.contextmanager
    def serving() -> Iterator[None]:
        sys.stdout.flush()
        os.dup2(saved, 1)
        try:
            yield
        finally:
            sys.stdout.flush()
            os.dup2(2, 1)

    try:
        yield serving
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def journal_path(options: McpOptions) -> Path:
    if options.journal is not None:
        return options.journal
    varied = f'-r{axes_name(options.randomize)}' if options.randomize else ''
    name = f'{options.task}-l{layout_name(options.layout)}-s{options.seed}{varied}.journal.jsonl'
    return options.out / name


def serve_mcp(
    config: GraphConfig,
    options: McpOptions,
    say: Callable[[str], None],
    serving: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
) -> int:
    """Serve until the client leaves (stdio) or a Ctrl-C or SIGTERM (either); 0, or 2 on bad
    input. `serving()` is the block in which standard output is the protocol's."""
    from harness_operator.budgets import OperatorBudgets
    from harness_operator.journal import Journal, JournalError
    from harness_operator.mcp_server import SessionHolder, build_server
    from harness_operator.session import OperatorError, OperatorSession
    from harness_recording.run_folder import RunFolder

    from harness_bringup.console import fail
    from harness_bringup.run import (
        UsageError,
        check_task,
        numbered,
        run_folder_path,
        verifier_eyes,
    )
    from harness_bringup.shared_memory import sweep

    try:
        check_task(options.task, options.layout)
    except UsageError as exc:
        return fail(str(exc))
    sweep(say)  # what killed processes of earlier runs left in /dev/shm (as supervisor.py)
    path = journal_path(options)
    claim = None
    try:
        # Claimed before --new renames it: a live server's journal is not moved under it.
        claim = Journal.claim(path)
        if options.new and path.exists():
            # (two --new in one second: the first one is kept too)
            stamped = path.with_name(f'{path.name}.{time.strftime("%Y%m%d-%H%M%S")}')
            kept = next(name for name in numbered(stamped) if not name.exists())
            path.rename(kept)
            say(f'the old journal is kept as {kept}')
        journal = Journal(path, OperatorBudgets(config.operator.budget_limits()))
        journal.check_goal(options.spec().goal)
        journal.hold(claim)
    except JournalError as exc:
        if claim is not None:
            claim.close()
        return fail(str(exc))
    close_abandoned_runs(options.out, path, say)  # (this server holds the journal now)
    run = RunFolder(run_folder_path(options.out, options.task, options.layout, options.seed, 'mcp'))
    # The agent says when it is done (finish): the simulator ending the episode at success
    # would stop every motion after it and tell the agent the ground truth.
    config = dataclasses.replace(
        config, worker=dataclasses.replace(config.worker, end_on_success=False)
    )
    params = config.write(run.path / 'params.yaml')
    run.event(
        {'type': 'episode', 'task': options.task, 'layout': options.layout}
        | {'seed': options.seed, 'randomize': axes_name(options.randomize), 'model': 'mcp'}
        | {'pid': os.getpid(), 'journal': str(path.resolve())}
    )
    opened: dict = {}
    # The station starts now, while the client connects, not at its first tool call: a warm
    # station (harness_bringup.warm_station), its kernel and the program process ready.
    warming = threading.Thread(
        target=_warm_up, args=(config, params, run.path / 'station', opened), daemon=True
    )
    warming.start()
    opened['warming'] = warming

    def open_session() -> OperatorSession:
        bag = run.bag_path if config.driver.record_bag else None
        warming.join()
        if opened.get('ending'):
            raise OperatorError(
                'the session is ending (the client left, or the server was interrupted) before '
                'the station started: nothing is run'
            )
        if 'warm_error' in opened:
            raise opened.pop('warm_error')
        graph = opened['graph'] = opened.pop('warm')
        graph.begin_episode(bag, config.driver)
        run.publish_to(graph.publish_event, graph.publish_model_image)
        graph.keep_camera_frames()  # each trial's video, written when the trial returns
        task = TASKS[options.task]()
        spec = options.spec(config.operator.action_timeout_seconds)
        session = OperatorSession(
            graph,
            verifier_eyes(graph, config),
            journal,
            task,
            spec,
            run,
            say,
            policies=policy_names(config),
            replay=graph.notes.get('backend') == 'mujoco',  # hardware keeps its world
            policy_versions=policy_versions(config),
        )
        opened['session'] = session
        return session

    holder = SessionHolder(open_session)
    server = build_server(holder, policies=bool(config.kernel.policies))
    say(f'journal: {path}; run folder: {run.path}')
    started = time.monotonic()

    try:
        # (the servers end a tool call under way only once it returns)
        with interrupts_stop(lambda: stop_motion(opened, say, 'interrupted')) as interrupted:
            if options.http_port is None:
                # The SDK's stdio server notices the client's end only once the call under way
                # returns: a program of many motions would go on moving the robot for minutes.
                try:
                    with serving():  # (descriptor 1 is the protocol's from here)
                        watch = ClientWatch(
                            os.dup(0),
                            lambda: stop_motion(opened, say, 'the client left'),
                            os.dup(1),
                            lambda: _end_server(opened, say),
                        )
                        with watch:
                            server.run()
                except* BrokenPipeError:  # (the SDK's writer met the closed pipe first)
                    stop_motion(opened, say, _STDOUT_CLOSED)
            else:
                # (uvicorn handles the signals while it serves, then raises them again here)
                serve_http(server, options, say, interrupted)
    except KeyboardInterrupt:
        pass
    finally:
        lean = config.driver.recording == 'lean'
        close_run(run, opened, holder, started, say, options.spec().goal, report=not lean)
    return 0


def close_abandoned_runs(out: Path, journal: Path, say: Callable[[str], None]) -> None:
    """Close the run folders under `out` that earlier servers on `journal` left open: such a
    server was killed with SIGKILL (no summary, no end event: the next session's resume finds
    its trial started and never recorded). Called while holding the journal: no live server
    writes them."""
    from harness_recording.run_folder import read_events

    from harness_bringup.supervisor import close_abandoned

    if not out.is_dir():
        return
    for folder in sorted(out.glob('*-mcp*')):  # (-mcp-2: two started in one second)
        if not folder.is_dir() or folder.is_symlink():
            continue
        events = read_events(folder)
        begun = next((e for e in events if e.get('type') == 'episode'), {})
        if Path(str(begun.get('journal', ''))).resolve() != journal.resolve():
            continue
        if any(e.get('type') == 'end' for e in events):
            continue
        pid = begun.get('pid')
        died = (
            f'the harness mcp server (pid {pid}) ended without closing its run folder (killed '
            'with SIGKILL?); closed by the next server on its journal'
        )
        close_abandoned(folder, died, say)


_STDOUT_CLOSED = 'the client closed its end of standard output (no reply can reach it)'


def _end_server(opened: dict, say: Callable[[str], None]) -> None:
    """The client stopped reading the server's replies while its requests may still come:
    stop the motion, and end the server as a SIGTERM does (its run folder is closed)."""
    stop_motion(opened, say, _STDOUT_CLOSED)
    os.kill(os.getpid(), signal.SIGTERM)


class ClientWatch:
    """Calls `gone()` once when the client's end of the stdio pipe `fd` (a duplicate of the
    server's standard input, owned here) closes: the client left or was killed. Watches
    without reading (what the client sent is the transport's). With `output` (a duplicate of
    standard output, owned here), calls `deaf()` once when the client's reading end of it
    closes while its writing end stays open."""

    def __init__(
        self,
        fd: int,
        gone: Callable[[], None],
        output: int | None = None,
        deaf: Callable[[], None] | None = None,
    ) -> None:
        self.fd = fd
        self.gone = gone
        self.output, self.deaf = output, deaf
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name='client-watch', daemon=True)

    def __enter__(self) -> ClientWatch:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        os.close(self.fd)
        if self.output is not None:
            os.close(self.output)

    def _watch(self) -> None:
        import select

        poll = select.poll()
        # POLLHUP (a pipe with no writer left) is reported whatever the mask; POLLRDHUP for a
        # socket's peer that shut down.
        poll.register(self.fd, getattr(select, 'POLLRDHUP', 0))
        if self.output is not None:  # (POLLERR: a pipe whose reader has gone; a file: never)
            poll.register(self.output, 0)
        hung_up = select.POLLHUP | select.POLLERR | getattr(select, 'POLLRDHUP', 0)
        while not self._stop.is_set():
            flags = 0
            for fd, each in poll.poll(500):
                if fd != self.output:
                    flags |= each
                elif each & (select.POLLERR | select.POLLHUP):
                    poll.unregister(fd)
                    self.deaf()
            if flags & select.POLLNVAL:  # not a descriptor poll can watch: nothing to do
                return
            if flags & hung_up:
                if not self._unread():
                    self.gone()
                    return
                # a client that sent its last requests and closed its end: gone once the
                # transport has read them
                self._stop.wait(0.1)

    def _unread(self) -> int:
        """Bytes the client sent that the transport has not read yet."""
        import fcntl
        import termios

        try:
            return struct.unpack('i', fcntl.ioctl(self.fd, termios.FIONREAD, b'\0' * 4))[0]
        except OSError:
            return 0


def stop_motion(opened: dict, say: Callable[[str], None], why: str) -> None:
    """The session is ending (`why`: the client's end of the pipe closed, an interrupt):
    engage the emergency stop at once, so that a call still running moves nothing more (its
    cell ends at its next motion, refused); a session not open yet is not opened (its first
    call was the client's last)."""
    if opened.get('ending'):  # (stopped once already: the client left, then an interrupt)
        return
    opened['ending'] = True
    session, graph = opened.get('session'), opened.get('graph')
    if session is not None:
        session.estopped = True
    if graph is not None:
        try:
            graph.estop(True)
        except Exception as exc:  # the station is going anyway: say so, close the run
            say(f'{why}; the emergency stop could not be engaged: {exc}')
            return
        say(f'{why}: the emergency stop is engaged')


# What ends a server as a Ctrl-C does: SIGTERM (a client closing it), SIGHUP (its terminal or
# ssh session closing; its default ended the process with its run folder left open).
STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def interrupts_stop(stop: Callable[[], None]) -> Iterator[Callable[[], None]]:
    """Within the block a Ctrl-C, SIGTERM or SIGHUP (STOPPING_SIGNALS) has `stop()`
    called at once, then ends the block as a Ctrl-C does. (Asyncio leaves a handler set here
    in place; its own would only cancel the main task, which waits for the tool call.) The
    block gets `interrupted()`, which asks for the same stop from another signal handler
    (uvicorn's). `stop()` runs once, on a thread started before: a signal handler may
    interrupt code that holds a lock it would need (starting a thread takes one)."""
    asked, over = threading.Event(), threading.Event()  # (an interrupt; the block's end)

    def stopper() -> None:
        asked.wait()
        if not over.is_set():
            stop()

    thread = threading.Thread(target=stopper, name='interrupt-stop', daemon=True)
    thread.start()

    def handle(*_) -> None:
        asked.set()
        raise KeyboardInterrupt

    saved = {n: signal.signal(n, handle) for n in STOPPING_SIGNALS}
    try:
        yield asked.set
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)
        if not asked.is_set():  # (the stopper ends without a stop; after an interrupt, with it)
            over.set()
            asked.set()


def _warm_up(config: GraphConfig, params: Path, folder: Path, opened: dict) -> None:
    """Start the session's station into `opened['warm']` (or its error, `warm_error`)."""
    from harness_bringup.warm_station import WarmGraph

    try:
        folder.mkdir(parents=True, exist_ok=True)
        lean = config.driver.recording == 'lean'
        opened['warm'] = WarmGraph(params, folder, config.driver.record_bag, lean).__enter__()
    except Exception as exc:  # said at the first tool call, as a station that did not start
        opened['warm_error'] = exc


def token_path(options: McpOptions) -> Path:
    """Where `harness mcp --http` writes its bearer token (readable by its user alone)."""
    return options.out / f'mcp-{options.http_port}.token'


def serve_http(
    server, options: McpOptions, say: Callable[[str], None], interrupted: Callable[[], None]
) -> None:
    """Streamable HTTP at http://host:port/mcp behind a bearer token made now: printed once
    and written to token_path(options); a request without it is answered 401. A Ctrl-C,
    SIGTERM or SIGHUP calls `interrupted()` (interrupts_stop's: safe in a signal handler) at
    once, then shuts the server down: the tool call under way ends at its next motion (the stop is
    engaged) and is recorded, but the SDK's session manager closes its stream first, so its
    client gets no reply (a new session's retry by its key returns the trial)."""
    import anyio
    import uvicorn
    from harness_operator.bearer import BearerToken, new_token, write_token

    token = new_token()
    path = token_path(options)
    write_token(path, token)
    app = BearerToken(server.streamable_http_app(host=options.host), token)
    url = f'http://{options.host}:{options.http_port}/mcp'
    say(f'serving MCP over streamable HTTP at {url}')
    say(f'bearer token (send "Authorization: Bearer <token>"): {token} (also in {path})')

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            interrupted()
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self):
            # uvicorn shuts down gracefully (the calls under way answered) on SIGINT and
            # SIGTERM alone: a SIGHUP went to interrupts_stop's handler, raised in its loop
            with super().capture_signals():
                if threading.current_thread() is not threading.main_thread():
                    yield
                    return
                before = signal.signal(signal.SIGHUP, self.handle_exit)
                try:
                    yield
                finally:
                    signal.signal(signal.SIGHUP, before)

    config = uvicorn.Config(app, host=options.host, port=options.http_port, log_level='warning')
    try:
        anyio.run(Server(config).serve)
    finally:
        path.unlink(missing_ok=True)  # the token dies with the server


def policy_names(config: GraphConfig) -> tuple[str, ...]:
    """The catalogue's policies (none without kernel.policies)."""
    from harness_bringup.run import policy_catalog

    catalog = policy_catalog(config)
    return tuple(catalog.policies) if catalog is not None else ()


def policy_versions(config: GraphConfig) -> dict[str, int]:
    """Each catalogue policy's version (an executor preference is kept with it)."""
    from harness_bringup.run import policy_catalog

    catalog = policy_catalog(config)
    return {n: p.version for n, p in catalog.policies.items()} if catalog is not None else {}


def close_run(
    run,
    opened: dict,
    holder,
    started: float,
    say: Callable[[str], None],
    goal: dict,
    report: bool = True,
) -> None:
    """The run folder of the session, complete whatever happened: the ground truth (tier 4,
    never shown to the agent), the end event, summary.json, the bag, the report (with
    `report`: a lean recording has none; the dataset is written trial by trial, by the
    session). `goal`: the session's task, layout and seed."""
    from harness_bringup.run import write_report_safely

    # The run folder first: a second Ctrl-C or SIGTERM waits; SIGKILL still ends it.
    for number in STOPPING_SIGNALS:
        signal.signal(number, signal.SIG_IGN)
    graph, session = opened.get('graph'), opened.get('session')
    never_started = graph is None and not holder.error  # the client called no tool
    summary: dict = {
        **goal,
        'model': 'mcp',
        'agent': 'an agent operator over MCP',
        'status': 'session_ended' if never_started else 'error',
    }
    if never_started:
        summary['detail'] = 'the client called no tool: the station, started for it, was never used'
    if session is not None:
        # a call still running (the client left mid-action): stop its motion, let it end
        session.estopped = True
        with contextlib.suppress(Exception):
            graph.estop(True)
        if session._lock.acquire(timeout=10.0):
            session._lock.release()
        summary = session.summary()
        summary['status'] = 'finished' if session.finished else 'session_ended'
    if holder.error:
        summary['detail'] = holder.error
    # What a client that kills the server soon after leaving must not lose comes first: the
    # ground truth, the end event, summary.json.
    summary['outcome'] = None
    if graph is not None:
        try:
            o = graph.outcome(end=True)
            summary['outcome'] = {'success': o.success, 'score': o.score, 'detail': o.detail}
            summary['env_steps'] = graph.robot().step
        except Exception as exc:
            summary['detail'] = f'could not read the outcome: {exc}'
    summary['wall_seconds'] = round(time.monotonic() - started, 2)
    run.summary(summary)
    run.event({'type': 'end', 'status': summary['status'], 'detail': summary.get('detail', '')})
    # Then the bag (its recorder closes it on the end event), the program's files (the kernel
    # moves them in) and the report; the station last: under load one started for a first
    # tool call that never came may still be starting, and a stdio client SIGKILLs the server
    # 4 s after it left.
    if graph is not None:
        try:
            summary |= graph.stop_recording()
        except Exception as exc:
            summary['bag_error'] = f'the recording could not be closed: {exc}'
        run.summary(summary)  # with what became of the bag
        with contextlib.suppress(Exception):
            graph.stop_kernel()
    run.close()
    try:
        # the trials are in <run>/lerobot already (each written when it returned)
        if report:
            write_report_safely(run.path, say)
    finally:  # (the stations are closed whatever the report met)
        opened['warming'].join()  # a station still starting is closed here, not left behind
        opened.pop('warm_error', None)
        unused = opened.pop('warm', None)
        if unused is not None:
            unused.__exit__(None, None, None)
        if graph is not None:
            graph.__exit__(None, None, None)
    say(f'run folder: {run.path}')
