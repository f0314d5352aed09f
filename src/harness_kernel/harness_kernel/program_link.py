"""The trusted side of the channel to the program process, for the running cell: it serves the
program until the message the kernel waits for, watches the cell's time and workspace,
interrupts what overruns, and restarts a process that died or broke. While an execution calls
the reactive stage every tick, the cell's thread lends the channel to the thread that asks for
the steps (`reactive_step`, the skill server's per-tick callback), which exchanges them itself;
a step asked for at any other time is answered with a fault.

The kernel (kernel.py) decides what a call does; this module only moves messages and time."""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from harness_reactive.stage import ReactiveResult
from harness_types.cell import ShownImage
from harness_types.execution import Execution
from harness_types.robot_state import RobotState

from harness_kernel.bounds import (
    ClippedOutput,
    ProgramBounds,
    WorkspaceUse,
    program_text,
    workspace_use,
)
from harness_kernel.channel import ChannelError
from harness_kernel.program_frames import reactive_result
from harness_kernel.program_host import (
    CELL_TIMEOUT_SIGNAL,
    REACTIVE_TIMEOUT_SIGNAL,
    WORKSPACE_FULL_SIGNAL,
    ProgramHost,
)

INTERRUPT_GRACE_S = 2.0  # after a timeout signal, how long the program may take to stop
WORKSPACE_CHECK_S = 0.1  # while a cell runs, its workspace is measured this often


class CellStop(Exception):  # noqa: N818 (a control-flow signal, not an error)
    """Ends the cell from the kernel's side: escalated, episode_ended, finished, or a handler
    that raised (handler_error)."""

    def __init__(self, kind: str, execution: Execution | None = None, text: str = '') -> None:
        super().__init__(kind)
        self.kind, self.execution, self.text = kind, execution, text


class CellOver(Exception):  # noqa: N818 (a control-flow signal, not an error)
    """The program reported the cell done (or died) while the kernel waited for something
    else: unwind to run_cell."""

    def __init__(self, done: dict | None, error: str = '') -> None:
        super().__init__(error or 'cell over')
        self.done, self.error = done, error


class _ReactiveLateError(Exception):
    """The program did not answer a reactive step in time."""


class _UnresponsiveError(Exception):
    """Reactive code neither returned nor stopped when interrupted: the process must go."""


@dataclass
class RunningCell:
    """The kernel's record of the cell that runs (or of a wrap-up without the program)."""

    deadline: float
    output: ClippedOutput = field(default_factory=ClippedOutput)
    executions: list[Execution] = field(default_factory=list)
    images: list[ShownImage] = field(default_factory=list)
    events_handled: int = 0
    stop: CellStop | None = None
    reactive: bool = False  # the program has guards: executions call its reactive stage
    interrupted_at: float = 0.0
    interrupted_why: str = ''  # '' = its time ran out
    notes: list[str] = field(default_factory=list)  # the kernel's own lines for the report
    records: int = 0  # kernel.log records of this cell's calls and executions
    unlogged: int = 0  # records over the cell's bound, counted and not written
    workspace_checked: float = 0.0
    workspace_start: WorkspaceUse | None = None  # a cell may shrink an overfull workspace
    # What the workspace held when the cell was interrupted: the grace is for stopping, and
    # a program that fills it past its quota after that is stopped at once.
    workspace_interrupted: WorkspaceUse | None = None
    max_calls: int = 0  # the most API calls served in this cell (0: no bound)
    calls: int = 0  # the API calls asked for in this cell


class ProgramLink:
    """The channel's trusted end (and the `Pump` of the executions the program takes part
    in). `on_call(message, allowed)` serves a call the program sends (refused unless
    `allowed`); `log` takes kernel.log records."""

    def __init__(
        self,
        host: ProgramHost,
        bounds: ProgramBounds,
        cell_timeout: float,
        reactive_deadline: float,
        on_call: Callable[[dict, bool], None],
        log: Callable[[dict], None],
    ) -> None:
        self.host = host
        self.bounds = bounds
        self.cell_timeout = cell_timeout
        self.reactive_deadline = reactive_deadline
        self.on_call = on_call
        self.log = log
        self.cell: RunningCell | None = None
        self.cell_thread = 0  # the thread running the cell (run_cell's)
        self.cells = 0  # cells sent to the program; its 'done' names the cell it ends
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._closed = False
        self._wake_lock = threading.Lock()  # a wake-up never writes to a descriptor being closed
        # The lent channel (reactive steps exchanged on the asking thread): relayed through the
        # cell's thread, each step cost two thread hand-offs (perf/skills.py's guarded loop:
        # ~1.2x slower on 2 loaded cores). It is used under the lock; what ends the cell there
        # is handed to the cell's thread.
        self._channel_lock = threading.Lock()
        self._channel_lent = False
        self.lent_news: Exception | None = None

    def start(self, adopt: bool = False) -> dict:
        """Start the program process (frozen until the first cell); returns its sandbox.
        `adopt`: the host's process was started ahead (a warm kernel starts the next episode's
        while the last one ends) and is taken as it is when it still runs."""
        sandbox = self.host.sandbox if adopt and self.host.alive() else self.host.start()
        self.host.freeze()
        self.log({'call': '(kernel)', 'program_process': self.host.pid, 'sandbox': sandbox})
        return sandbox

    def begin(self, cell: RunningCell) -> None:
        """`cell` runs now, on this thread."""
        self.cell = cell
        self.cell_thread = threading.get_ident()
        self.lent_news = None

    def close(self) -> None:
        with self._wake_lock:
            self._closed = True
        self.host.stop()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    def serve_until(self, expect: str, deadline: float | None = None, calls: bool = True) -> dict:
        """Serve the program until it sends `expect`; API calls are served when `calls`."""
        cell = self.cell
        channel = self.host.channel
        while True:
            now = time.monotonic()
            self._check_deadlines(cell, now, deadline)
            ready = self._ready(0.05)
            if self.host.output_fd in ready:
                cell.output.write(self.host.read_output())
            if self._wake_r in ready:
                self._woken()
            if channel.fileno() not in ready:
                if not self.host.alive():
                    raise CellOver(None, self.lost(self.death()))
                continue
            message = self._take(expect, calls, f'while the kernel waited for {expect!r}')
            if message is not None:
                return message

    def _take(self, expect: str | None, calls: bool, during: str) -> dict | None:
        """One message from the program: returned when it is `expect`; a call is served
        (refused unless `calls`) and None returned; the cell's end is raised as CellOver,
        anything else as ChannelError (`during` says what the kernel was doing)."""
        message = self.host.channel.recv(timeout=5.0)
        op = message.get('op') if isinstance(message, dict) else None
        if op == 'done' and message.get('cell') != self.cells:
            # An earlier cell's end, come late: that cell was ended early by a 'done' the
            # program sent itself; taken now, it would end this cell before its code ran.
            return None
        if expect is not None and op == expect:
            return message
        if op == 'done':
            raise CellOver(message)
        if op == 'call':
            self.on_call(message, calls)
            return None
        raise ChannelError(f'the program sent {op!r} {during}')

    def _check_deadlines(self, cell: RunningCell, now: float, deadline: float | None) -> None:
        if deadline is not None and now > deadline:
            raise _ReactiveLateError()
        if not cell.interrupted_at:
            if now > cell.deadline:
                self._interrupt(cell, now, '', self.workspace())
            elif now > cell.workspace_checked + WORKSPACE_CHECK_S:
                cell.workspace_checked = now
                use = self.workspace()
                over = use.over(self.bounds, since=cell.workspace_start)
                if over:
                    self._interrupt(cell, now, over, use)
        elif now > cell.interrupted_at + INTERRUPT_GRACE_S:
            raise CellOver(None, self.lost(self.interruption(cell, stopped=False)))
        elif now > cell.workspace_checked + WORKSPACE_CHECK_S:
            cell.workspace_checked = now
            over = self.workspace().over(self.bounds, since=cell.workspace_interrupted)
            if over:
                raise CellOver(None, self.lost(self.interruption(cell, False, over)))

    def _interrupt(self, cell: RunningCell, now: float, why: str, use: WorkspaceUse) -> None:
        """Stop the running cell: its time ran out (`why` empty) or it passed a bound; `use`:
        what its workspace holds now."""
        cell.interrupted_at, cell.interrupted_why = now, why
        cell.workspace_checked, cell.workspace_interrupted = now, use
        self.host.interrupt(WORKSPACE_FULL_SIGNAL if why else CELL_TIMEOUT_SIGNAL)

    def interruption(self, cell: RunningCell, stopped: bool = True, written_on: str = '') -> str:
        """What ended an interrupted cell, for its traceback; `written_on`: the bound its
        program passed after it was interrupted (then stopped at once)."""
        if written_on:
            reason = 'its workspace was full' if cell.interrupted_why else 'its time ran out'
            return (
                f'WorkspaceFull: {written_on}, filled after the cell was interrupted ({reason}); '
                'the cell was stopped at once. Delete files to write more'
            )
        how = 'was stopped' if stopped else 'did not stop when interrupted'
        if cell.interrupted_why:
            return (
                f'WorkspaceFull: {cell.interrupted_why}; the cell {how}. Delete files to write more'
            )
        return (
            f'CellTimeout: the cell ran longer than cell_timeout_seconds '
            f'({self.cell_timeout:g} s) and {how}'
        )

    def workspace(self) -> WorkspaceUse:
        return workspace_use(str(self.host.workspace), self.bounds.workspace_files, self.host.pid)

    def send(self, message: dict) -> None:
        """To the program, waiting for it to read at most until the cell's end (and the grace
        after it): a program that does not read its replies cannot hold the kernel."""
        cell = self.cell
        if cell is None or threading.get_ident() != self.cell_thread:
            # a reply sent on the lent channel (reactive_step's thread): its step's bound
            timeout = self.reactive_deadline
        else:
            timeout = max(0.05, cell.deadline + INTERRUPT_GRACE_S - time.monotonic())
        self.host.channel.send(message, timeout=timeout)

    def serve(self, wait_s: float) -> None:
        """While a skill runs (Pump.serve): read output, watch the program and the cell's
        time, and the program's messages (the lent channel's news while reactive steps use it).
        The program may not call the API now (one call at a time)."""
        try:
            self._serve_while_executing(wait_s)
        except BaseException:
            self.lend_channel(False)
            raise

    def _serve_while_executing(self, wait_s: float) -> None:
        cell = self.cell
        now = time.monotonic()
        self._check_deadlines(cell, now, None)
        if cell.interrupted_at:
            # The program may now end the cell by itself ('done'): its thread watches again.
            self.lend_channel(False)
        lent = self._channel_lent
        channel = self.host.channel
        ready = self._ready(wait_s, channel=not lent)
        if self.host.output_fd in ready:
            cell.output.write(self.host.read_output())
        if self._wake_r in ready:
            self._woken()
        self.raise_lent_news()
        if not lent and channel.fileno() in ready:
            self._take(None, False, 'while a skill ran')
        elif not self.host.alive():
            self.lend_channel(False)  # before the process and its channel go
            raise CellOver(None, self.lost(self.death()))

    def _ready(self, timeout: float, channel: bool = True) -> list[int]:
        fds = [self.host.channel.fileno(), self._wake_r] if channel else [self._wake_r]
        if self.host.output_fd >= 0:
            fds.append(self.host.output_fd)
        return select.select(fds, [], [], timeout)[0]

    def lost(self, why: str) -> str:
        """The program process is gone or broken: kill it; the next cell starts a new one.
        `why` may quote what the program sent (a codec's words): clipped."""
        self.host.stop()
        return (
            f'{program_text(why, 1000)}. The program process was stopped; the next cell '
            'runs in a new one and the variables of earlier cells are lost.'
        )

    def death(self) -> str:
        return f'the program process ended ({self.host.exit_description()})'

    def restart(self, cell: RunningCell) -> None:
        earlier = self.host.starts > 0
        self.start()
        self.host.thaw()
        if earlier:
            cell.notes.append(
                'the program process was started again: variables, functions, guards and '
                'handlers of earlier cells are lost'
            )

    def drain_output(self, cell: RunningCell) -> None:
        if self.host.output_fd >= 0:
            cell.output.write(self.host.read_output())

    def wake(self) -> None:
        """End a blocked serve() (Pump.wake), from any thread."""
        with self._wake_lock:
            if self._closed:  # a late done-callback: the descriptor may be another file's now
                return
            # A full pipe already holds a wake-up.
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake_w, b'x')

    def _woken(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 4096):
                pass

    def reactive_step(self, obs: RobotState, call_controller: bool) -> ReactiveResult:
        """The program's guards, until and controller for one tick (thread-safe). Exchanged
        on the calling thread while the cell's thread lends it the channel: during an
        execution that calls the reactive stage, until the execution ends, the cell is
        interrupted or something else comes from the program (handed to the cell's thread)."""
        with self._channel_lock:
            if not self._channel_lent:
                if self.cell is None:
                    return ReactiveResult(
                        fault='no cell is running: program code runs only in cells'
                    )
                return ReactiveResult(
                    fault='no execution of the running cell calls the reactive stage now'
                )
            try:
                return self._reactive(obs, call_controller)
            except Exception as exc:  # the cell is over or its process broken: the cell's news
                self._channel_lent = False
                self.lent_news = exc
                self.wake()
                return ReactiveResult(fault='the cell ended during this step (its result says why)')

    def _reactive(self, obs: RobotState, call_controller: bool) -> ReactiveResult:
        self.send({'op': 'reactive', 'obs': obs, 'call_controller': call_controller})
        try:
            answer = self._reactive_answer(time.monotonic() + self.reactive_deadline)
            return reactive_result(answer.get('result'))
        except _ReactiveLateError:
            self.host.interrupt(REACTIVE_TIMEOUT_SIGNAL)
        try:
            late = reactive_result(
                self._reactive_answer(time.monotonic() + INTERRUPT_GRACE_S).get('result')
            )
        except _ReactiveLateError:
            raise _UnresponsiveError(
                'reactive code did not return and did not stop when interrupted'
            ) from None
        fault = f'reactive code did not return within {self.reactive_deadline * 1e3:.0f} ms'
        return ReactiveResult(fault=f'{fault}: {late.fault}')

    def _reactive_answer(self, deadline: float) -> dict:
        """The program's reactive_result (the caller holds the lent channel). A call is refused
        as serve() refuses it; the cell's end or anything else is raised."""
        channel = self.host.channel
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _ReactiveLateError()
            if not select.select([channel], [], [], left)[0]:
                continue
            message = self._take('reactive_result', False, 'while a skill ran')
            if message is not None:
                return message

    def lend_channel(self, lend: bool) -> None:
        with self._channel_lock:
            self._channel_lent = lend

    def raise_lent_news(self) -> None:
        """What ended the cell on the lent channel, raised on the cell's thread."""
        news, self.lent_news = self.lent_news, None
        if news is not None:
            self.lend_channel(False)
        if isinstance(news, _UnresponsiveError):
            raise CellOver(None, self.lost(str(news)))
        if news is not None:
            raise news
