"""The kernel core (trusted): runs an episode's cells in the sandboxed program process and
does everything that touches the robot for it. No rclpy: the robot comes in as a `RobotPort`
(the kernel node implements it over ROS).

One thread runs a cell (`run_cell`): it sends the cell to the program process and serves the
program's requests (API calls) until the cell is done, reading the program's output as it
comes and clipping it. While that thread waits on a skill, other threads may ask for the
program's reactive step (`reactive_step`, the skill server's per-tick callback): during an
execution that calls the reactive stage, the cell's thread lends the channel to the asking
thread, which exchanges the step itself and hands the cell's thread anything else the program
sends; a step asked for at any other time is answered with a fault. Between cells the program
process is frozen. Everything
reported (executions, events handled, grips, the scene, the output, kernel.log) is measured
here, never taken from the program.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from harness_policy.catalog import Catalog
from harness_reactive.stage import ReactiveResult
from harness_skills.skill_table import SKILLS
from harness_types.camera import CameraView
from harness_types.cell import CellResult, ShownImage
from harness_types.config import KernelConfig
from harness_types.execution import EPISODE_ENDED, Execution, skill_error
from harness_types.robot_state import ARMS, RobotState
from harness_types.scene import LocatedObject, SceneReport, Verdict

from harness_kernel.api_table import API, API_NAMES
from harness_kernel.bounds import (
    ClippedOutput,
    ProgramBounds,
    WorkspaceUse,
    bounded_record,
    program_text,
    workspace_use,
)
from harness_kernel.call_arguments import checked
from harness_kernel.channel import ChannelClosedError, ChannelError
from harness_kernel.contact import ContactSkills
from harness_kernel.foresight import Foresight
from harness_kernel.learned import (
    POLICY_TO_END_SECONDS,
    LearnedHalf,
)
from harness_kernel.perception import Perception
from harness_kernel.perception.oracle import OraclePerception
from harness_kernel.program_frames import loggable, program_done, reactive_result
from harness_kernel.program_host import (
    CELL_TIMEOUT_SIGNAL,
    REACTIVE_TIMEOUT_SIGNAL,
    ProgramHost,
    ProgramStartError,
)
from harness_kernel.robot_port import Idle, RobotPort

HOLDING_FORCE_N = 0.5  # the wrap-up keeps a gripper closed that feels at least this much
INTERRUPT_GRACE_S = 2.0  # after a timeout signal, how long the program may take to stop
WORKSPACE_CHECK_S = 0.1  # while a cell runs, its workspace is measured this often


class _Stop(Exception):  # noqa: N818 (a control-flow signal, not an error)
    """Ends the cell from the kernel's side: escalated, episode_ended, finished, or a handler
    that raised (handler_error)."""

    def __init__(self, kind: str, execution: Execution | None = None, text: str = '') -> None:
        super().__init__(kind)
        self.kind, self.execution, self.text = kind, execution, text


class _CellOver(Exception):  # noqa: N818 (a control-flow signal, not an error)
    """The program reported the cell done (or died) while the kernel waited for something
    else: unwind to run_cell."""

    def __init__(self, done: dict | None, error: str = '') -> None:
        super().__init__(error or 'cell over')
        self.done, self.error = done, error


class _CallRefusedError(Exception):
    """A call the kernel does not serve (reported to the program as a RuntimeError)."""


class _ReactiveLateError(Exception):
    """The program did not answer a reactive step in time."""


class _UnresponsiveError(Exception):
    """Reactive code neither returned nor stopped when interrupted: the process must go."""


@dataclass
class _Cell:
    deadline: float
    output: ClippedOutput = field(default_factory=ClippedOutput)
    executions: list[Execution] = field(default_factory=list)
    images: list[ShownImage] = field(default_factory=list)
    events_handled: int = 0
    stop: _Stop | None = None
    reactive: bool = False  # the program has guards: executions call its reactive stage
    interrupted_at: float = 0.0
    interrupted_why: str = ''  # '' = its time ran out
    notes: list[str] = field(default_factory=list)  # the kernel's own lines for the report
    records: int = 0  # kernel.log records of this cell's calls and executions
    unlogged: int = 0  # records over the cell's bound, counted and not written
    workspace_checked: float = 0.0
    workspace_start: WorkspaceUse | None = None  # a cell may shrink an overfull workspace


class Kernel:
    """The episode's kernel: `run_cell(code)`, `wrap_up()`, `reactive_step(...)`, `close()`."""

    def __init__(
        self,
        robot: RobotPort,
        host: ProgramHost,
        cell_timeout_seconds: float,
        reactive_budget_ms: float,
        table_top_z: float,
        closed_below: float,
        api: list[str] | None = None,
        log: Callable[[dict], None] = lambda record: None,
        on_located: Callable[[list[LocatedObject]], None] = lambda objects: None,
        perception: Perception | None = None,
        catalog: Catalog | None = None,
        world_model_shadow: bool = False,
        control_hz: float | None = None,
        bounds: ProgramBounds | None = None,
    ) -> None:
        self.robot = robot
        self.bounds = bounds or ProgramBounds.of(KernelConfig())
        self.shown_in_episode = 0
        self.on_located = on_located  # shows what locate() found (rviz markers)
        self.host = host
        self.cell_timeout = cell_timeout_seconds
        # An endless loop in reactive code is stopped well after its budget (the budget itself
        # is judged in the program process): 10x the budget, at least 0.2 s.
        self.reactive_deadline = max(0.2, 10 * reactive_budget_ms / 1e3)
        self.enabled = list(API_NAMES) if api is None else list(api)
        self.log = log
        # locate()'s backend comes from the configuration (kernel_node); the oracle is the
        # default only for kernels built directly (tests with a stand-in robot).
        self.perception = perception or Perception(OraclePerception(table_top_z))
        self.contact = ContactSkills(
            self._execute,
            robot.reachable,
            self._fail,
            robot.state,
            table_top_z,
            closed_below,
        )
        self.learned = LearnedHalf(catalog)
        self.foresight = Foresight(
            robot, self.perception, self.learned, log, world_model_shadow, control_hz
        )
        self._cell: _Cell | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._closed = False
        self._wake_lock = threading.Lock()  # a wake-up never writes to a descriptor being closed
        # Who does what the API table says a name's handler does (its `Kernel._<name>` for
        # 'kernel'); the skill server's names go through `_skill_call`.
        self._handlers = {
            'contact': self.contact,
            'learned': self.learned,
            'foresight': self.foresight,
        }
        self._call_lock = threading.Lock()
        # While an execution calls the reactive stage every tick, the cell's thread lends the
        # channel to the thread that asks for the steps (reactive_step), which exchanges them
        # itself: relayed through the cell's thread, each step cost two thread hand-offs
        # (perf/skills.py's guarded loop: ~1.2x slower on 2 loaded cores). The lent channel
        # is used under the lock; what ends the cell there is handed to the cell's thread.
        self._channel_lock = threading.Lock()
        self._channel_lent = False
        self._lent_news: Exception | None = None
        self._cell_thread = 0  # the thread running the cell (run_cell's)
        self._cells = 0  # cells sent to the program; its 'done' names the cell it ends

    # Starting and stopping -------------------------------------------------------------------

    def start(self) -> dict:
        """Start the program process (frozen until the first cell); returns its sandbox."""
        sandbox = self.host.start()
        self.host.freeze()
        self.log({'call': '(kernel)', 'program_process': self.host.pid, 'sandbox': sandbox})
        return sandbox

    def close(self) -> None:
        with self._wake_lock:
            self._closed = True
        self.host.stop()
        for fd in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                os.close(fd)

    # Cells -----------------------------------------------------------------------------------

    def run_cell(self, code: str) -> CellResult:
        """Run `code` in the program's namespace; the result is the kernel's own account."""
        with self._call_lock:
            cell = self._cell = _Cell(time.monotonic() + self.cell_timeout)
            self._cell_thread = threading.get_ident()
            cell.workspace_start = self._workspace()
            status, traceback, summary, restored = 'error', '', '', []
            self._lent_news = None
            try:
                if not self.host.alive():
                    self._restart(cell)
                self.host.thaw()
                self._cells += 1
                self._send({'op': 'cell', 'code': code, 'cell': self._cells})
                status, traceback, summary, restored = program_done(self._serve('done'))
            except _CellOver as over:
                if over.done is not None:
                    status, traceback, _, _ = program_done(over.done)
                else:
                    traceback = over.error
            except ChannelClosedError:
                self.host.wait(1.0)
                traceback = self._lost(self._death())
            except (ChannelError, ProgramStartError, OSError) as exc:
                traceback = self._lost(f'the program process failed: {exc}')
            finally:
                self._drain_output(cell)
                self.host.freeze()
                self._cell = None
            if cell.interrupted_at and traceback.strip() in ('CellTimeout', 'ReactiveTimeout', ''):
                traceback = self._interruption(cell)
            # a known status: _program_done keeps only STATUSES, the kernel's stops are among them
            status, summary = self._trusted_status(cell, status, summary)
            if cell.unlogged:
                cell.notes.append(
                    f"{cell.unlogged} records of this cell's calls were not written to "
                    f'kernel.log (kernel.log_records_per_cell: '
                    f'{self.bounds.log_records_per_cell})'
                )
                self.log({'call': '(kernel)', 'unlogged_records': cell.unlogged})
            return CellResult(
                status=status,
                output=cell.output.text(),
                notes=list(cell.notes),
                traceback=traceback,
                summary=summary,
                stopped_by=cell.stop.execution if cell.stop is not None else None,
                executions=cell.executions,
                images=cell.images,
                restored=restored,
                events_handled=cell.events_handled,
                scene=self._scene_report(status),
                **self._strategy_fields(),
            )

    def _trusted_status(self, cell: _Cell, status: str, summary: str) -> tuple[str, str]:
        """What the kernel saw wins over what the program says: an escalation, the episode's
        end or finish() stop the cell whatever the program did after; a program that claims
        one of these without the kernel having seen it ran an ordinary error."""
        stop = cell.stop
        if stop is not None:
            if stop.kind == 'handler_error':
                return 'error', ''
            return stop.kind, stop.text if stop.kind == 'finished' else ''
        if status in ('escalated', 'episode_ended', 'finished'):
            return 'error', ''
        return status, ''

    def wrap_up(self) -> CellResult:
        """After finish: open every gripper that holds nothing (neither a grip the kernel
        recorded nor a felt grip force), then both arms home. Runs here, not in the program:
        the program's guards, controllers and handlers do not apply, and it is frozen."""
        with self._call_lock:
            cell = self._cell = _Cell(time.monotonic() + self.cell_timeout)
            lines = [
                'wrap-up without the program: its guards, controllers and handlers do not apply'
            ]
            try:
                state = self.robot.state()
                for arm in ARMS:
                    held = arm in self.contact.grips
                    if not held and state.arm(arm).grip_force < HOLDING_FORCE_N:
                        self._wrap_up_step(
                            cell, 'open_gripper', dict(arm=arm, fraction=1.0, max_seconds=0.0)
                        )
                    else:
                        lines.append(f'{arm} gripper stays closed: it holds something')
                self._wrap_up_step(cell, 'home', dict(arm='', max_seconds=0.0))
                status = 'ok'
            except _Stop as stop:
                cell.stop, status = stop, stop.kind
            finally:
                self._cell = None
            cell.output.write('\n'.join(lines))
            return CellResult(
                status=status,
                output=cell.output.text(),
                stopped_by=cell.stop.execution if cell.stop else None,
                executions=cell.executions,
                scene=self._scene_report(status),
                **self._strategy_fields(),
            )

    def _strategy_fields(self) -> dict:
        s = self.learned.strategy
        return {'strategy': s.letter, 'strategy_kind': s.kind} if s else {}

    def policy_to_end(self, max_seconds: float = POLICY_TO_END_SECONDS) -> CellResult:
        """The driver's policy-to-end hook, once the model's post-policy calls are used up:
        the strategy's policy runs on (no stall stop) until the episode ends or `max_seconds`
        of simulated time pass. Runs here without the program, as the wrap-up does."""
        with self._call_lock:
            cell = self._cell = _Cell(time.monotonic() + self.cell_timeout)
            strategy = self.learned.strategy
            status, traceback = 'ok', ''
            try:
                if strategy is None or strategy.policy is None:
                    why = 'no policy to run to the end: the strategy is not A or C'
                    cell.output.write(why)
                    return CellResult(status='error', traceback=why, **self._strategy_fields())
                instruction = self.learned.instruction or strategy.kind
                args = dict(
                    name=strategy.policy,
                    instruction=instruction,
                    max_seconds=max_seconds,
                    region=None,
                    **self.learned.policy_arguments(strategy.policy, instruction, to_end=True),
                )
                e = self.robot.execute('run_policy', args, False, Idle())
                cell.executions.append(e)
                self._log_execution(e)
                cell.output.write(
                    f'policy-to-end: {strategy.policy} ran until {e.event}: {e.detail}'
                )
                if e.event == EPISODE_ENDED:
                    cell.stop, status = _Stop('episode_ended', e), 'episode_ended'
                elif not e.ok:
                    cell.stop, status = _Stop('escalated', e), 'escalated'
            except (RuntimeError, ValueError, KeyError, TypeError) as exc:
                # the skill server gone or not answering: the driver still finishes the episode
                status, traceback = 'error', f'policy-to-end could not run: {exc}'
            finally:
                self._cell = None
            return CellResult(
                status=status,
                output=cell.output.text(),
                traceback=traceback,
                stopped_by=cell.stop.execution if cell.stop else None,
                executions=cell.executions,
                scene=self._scene_report(status),
                **self._strategy_fields(),
            )

    def _wrap_up_step(self, cell: _Cell, skill: str, args: dict) -> None:
        e = self.robot.execute(skill, args, False, Idle())
        cell.executions.append(e)
        self._log_execution(e)
        if e.event == EPISODE_ENDED:  # e.g. homing with the cube lifted it high enough
            raise _Stop('episode_ended', e)
        if not e.ok:
            raise _Stop('escalated', e)

    # The channel loop ------------------------------------------------------------------------

    def _serve(self, expect: str, deadline: float | None = None, calls: bool = True) -> dict:
        """Serve the program until it sends `expect`; API calls are served when `calls`."""
        cell = self._cell
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
                    raise _CellOver(None, self._lost(self._death()))
                continue
            message = self._take(expect, calls, f'while the kernel waited for {expect!r}')
            if message is not None:
                return message

    def _take(self, expect: str | None, calls: bool, during: str) -> dict | None:
        """One message from the program: returned when it is `expect`; a call is served
        (refused unless `calls`) and None returned; the cell's end is raised as _CellOver,
        anything else as ChannelError (`during` says what the kernel was doing)."""
        message = self.host.channel.recv(timeout=5.0)
        op = message.get('op') if isinstance(message, dict) else None
        if op == 'done' and message.get('cell') != self._cells:
            # An earlier cell's end, come late: that cell was ended early by a 'done' the
            # program sent itself; taken now, it would end this cell before its code ran.
            return None
        if expect is not None and op == expect:
            return message
        if op == 'done':
            raise _CellOver(message)
        if op == 'call':
            self._handle_call(message, allowed=calls)
            return None
        raise ChannelError(f'the program sent {op!r} {during}')

    def _check_deadlines(self, cell: _Cell, now: float, deadline: float | None) -> None:
        if deadline is not None and now > deadline:
            raise _ReactiveLateError()
        if not cell.interrupted_at:
            if now > cell.deadline:
                self._interrupt(cell, now, '')
            elif now > cell.workspace_checked + WORKSPACE_CHECK_S:
                cell.workspace_checked = now
                over = self._workspace().over(self.bounds, since=cell.workspace_start)
                if over:
                    self._interrupt(cell, now, over)
        if cell.interrupted_at and now > cell.interrupted_at + INTERRUPT_GRACE_S:
            raise _CellOver(None, self._lost(self._interruption(cell, stopped=False)))

    def _interrupt(self, cell: _Cell, now: float, why: str) -> None:
        """Stop the running cell: its time ran out (`why` empty) or it passed a bound."""
        cell.interrupted_at, cell.interrupted_why = now, why
        self.host.interrupt(CELL_TIMEOUT_SIGNAL)

    def _interruption(self, cell: _Cell, stopped: bool = True) -> str:
        how = 'was stopped' if stopped else 'did not stop when interrupted'
        if cell.interrupted_why:
            return (
                f'WorkspaceFull: {cell.interrupted_why}; the cell {how}. Delete files to write more'
            )
        return (
            f'CellTimeout: the cell ran longer than cell_timeout_seconds '
            f'({self.cell_timeout:g} s) and {how}'
        )

    def _workspace(self) -> WorkspaceUse:
        return workspace_use(str(self.host.workspace), self.bounds.workspace_files, self.host.pid)

    def _send(self, message: dict) -> None:
        """To the program, waiting for it to read at most until the cell's end (and the grace
        after it): a program that does not read its replies cannot hold the kernel."""
        cell = self._cell
        if cell is None or threading.get_ident() != self._cell_thread:
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
            self._lend_channel(False)
            raise

    def _serve_while_executing(self, wait_s: float) -> None:
        cell = self._cell
        now = time.monotonic()
        self._check_deadlines(cell, now, None)
        if cell.interrupted_at:
            # The program may now end the cell by itself ('done'): its thread watches again.
            self._lend_channel(False)
        lent = self._channel_lent
        channel = self.host.channel
        ready = self._ready(wait_s, channel=not lent)
        if self.host.output_fd in ready:
            cell.output.write(self.host.read_output())
        if self._wake_r in ready:
            self._woken()
        self._raise_lent_news()
        if not lent and channel.fileno() in ready:
            self._take(None, False, 'while a skill ran')
        elif not self.host.alive():
            self._lend_channel(False)  # before the process and its channel go
            raise _CellOver(None, self._lost(self._death()))

    def _ready(self, timeout: float, channel: bool = True) -> list[int]:
        fds = [self.host.channel.fileno(), self._wake_r] if channel else [self._wake_r]
        if self.host.output_fd >= 0:
            fds.append(self.host.output_fd)
        return select.select(fds, [], [], timeout)[0]

    def _lost(self, why: str) -> str:
        """The program process is gone or broken: kill it; the next cell starts a new one.
        `why` may quote what the program sent (a codec's words): clipped."""
        self.host.stop()
        return (
            f'{program_text(why, 1000)}. The program process was stopped; the next cell '
            'runs in a new one and the variables of earlier cells are lost.'
        )

    def _death(self) -> str:
        return f'the program process ended ({self.host.exit_description()})'

    def _restart(self, cell: _Cell) -> None:
        earlier = self.host.starts > 0
        self.start()
        self.host.thaw()
        if earlier:
            cell.notes.append(
                'the program process was started again: variables, functions, guards and '
                'handlers of earlier cells are lost'
            )

    def _drain_output(self, cell: _Cell) -> None:
        if self.host.output_fd >= 0:
            cell.output.write(self.host.read_output())

    # API calls -------------------------------------------------------------------------------

    def _handle_call(self, message: dict, allowed: bool) -> None:
        cell = self._cell
        name = message.get('name')
        args = message.get('args')
        reply: dict = {'op': 'reply', 'id': message.get('id')}
        started = time.monotonic()
        record: dict = {'call': str(name)[:64], 'args': loggable(args)}
        try:
            if cell.stop is not None:
                raise cell.stop
            if not allowed:
                raise _CallRefusedError(
                    f'{name}() was called while another call or reactive code was running: '
                    'programs call the API one call at a time, and not from guards, '
                    'controllers or until predicates'
                )
            if not isinstance(name, str) or not isinstance(args, dict):
                raise _CallRefusedError('a call needs a name and a mapping of arguments')
            if name not in API_NAMES:
                raise _CallRefusedError(f'{name!r} is not part of the program API')
            if name not in self.enabled:
                raise PermissionError(
                    f'{name}() is not enabled in this episode (kernel.api); enabled: '
                    f'{", ".join(self.enabled) or "none"}'
                )
            cell.reactive = bool(message.get('reactive', False))
            handler = API[name].handler
            if handler == 'program':
                raise _CallRefusedError(f'{name}() runs in the program, not in the kernel')
            call = self._skill_call if handler == 'skill_server' else self._named_call
            value = call(name, args)
            reply['value'] = value
            record['result'] = loggable(value)
        except _Stop as stop:
            cell.stop = stop
            reply.update(
                stop=stop.kind, execution=stop.execution, summary=stop.text, message=stop.text
            )
            record['stopped'] = stop.kind
        except _CallRefusedError as exc:
            reply.update(error='RuntimeError', message=str(exc))
            record['refused'] = str(exc)
        except (TypeError, ValueError, KeyError, RuntimeError, PermissionError) as exc:
            reply.update(error=type(exc).__name__, message=str(exc)[:2000])
            record.update(raised=type(exc).__name__, detail=str(exc)[:2000])
        record['wall_s'] = round(time.monotonic() - started, 4)
        self._record(record)
        self._send(reply)

    def _named_call(self, name: str, args: dict) -> Any:
        """A name the kernel, its contact skills or its learned half handle: the arguments
        bound to the stub and checked by kind, then the handler's method of that name."""
        entry = API[name]
        try:
            bound = inspect.signature(entry.stub).bind(**args)
        except TypeError as exc:
            raise TypeError(f'{name}(): {exc}') from None
        bound.apply_defaults()
        arguments = checked(entry, dict(bound.arguments))
        handler = self._handlers.get(entry.handler)
        method = getattr(self, f'_{name}') if handler is None else getattr(handler, name)
        return method(**arguments)

    def _skill_call(self, name: str, args: dict) -> Execution:
        spec, entry = SKILLS[name], API[name]
        parameters = [
            p
            for p in entry.signature().parameters.values()
            if p.name not in entry.program_callbacks
        ]
        try:
            bound = inspect.Signature(parameters).bind(**args)
        except TypeError as exc:
            raise TypeError(f'{name}(): {exc}') from None
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        if name == 'run_policy':  # the catalogue's entry goes with the goal
            arguments.update(
                self.learned.policy_arguments(arguments['name'], arguments['instruction'])
            )
        try:
            spec.goal(arguments)  # the arguments must make a goal before anything moves
        except (TypeError, ValueError, KeyError, AssertionError) as exc:
            raise ValueError(f'{name}(): bad arguments: {exc}') from None
        return self._execute(name, arguments)

    def _execute(self, skill: str, args: dict) -> Execution:
        """One skill execution for the running cell, through the program's handlers."""
        cell = self._cell
        refused = self.learned.refusal(skill)
        if refused:
            return self._fail(skill, str(args.get('arm', '')), refused)
        reactive = cell.reactive or API[skill].reactive
        shadow = self.foresight.shadow_predict(args) if skill == 'run_policy' else None
        # The skill server calls the reactive stage every tick of a reactive execution, so the
        # channel is read at least that often while it is lent.
        self._lend_channel(reactive)
        try:
            e = self.robot.execute(skill, args, reactive, self)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f'{skill}(): {exc}') from None
        finally:
            self._lend_channel(False)  # waits for a step in progress
        self._raise_lent_news()
        if shadow is not None:
            self.foresight.shadow_score(shadow, e)
        cell.executions.append(e)
        self._log_execution(e)
        return self._dispatch(e)

    def _fail(self, skill: str, arm: str, detail: str) -> Execution:
        """A contact skill that could not do what was asked: SKILL_ERROR, through the handlers."""
        state = self.robot.state()
        e = skill_error(skill, arm, detail, state.step, state.time)
        self._cell.executions.append(e)
        self._log_execution(e)
        return self._dispatch(e)

    def _dispatch(self, e: Execution) -> Execution:
        if e.ok:
            return e
        if e.event == EPISODE_ENDED:
            raise _Stop('episode_ended', e)
        self._send({'op': 'event', 'execution': e})
        answer = self._serve('handled')
        if answer.get('error'):
            raise _Stop('handler_error', e, str(answer['error'])[:2000])
        if answer.get('absorbed') is True:
            e.handled = True
            self._cell.events_handled += 1
            return e
        raise _Stop('escalated', e)

    def _record(self, record: dict) -> None:
        """A kernel.log record of the running cell's calls and executions: at most
        log_records_per_cell of them are written, each clipped; the rest are counted."""
        cell = self._cell
        if cell is not None:
            cell.records += 1
            if cell.records > self.bounds.log_records_per_cell:
                cell.unlogged += 1
                return
        self.log(bounded_record(record))

    def _log_execution(self, e: Execution) -> None:
        self._record(
            {
                'execution': e.skill,
                'arm': e.arm,
                'event': e.event,
                'detail': e.detail,
                'ticks': len(e.trace),
                'steps': [e.start_step, e.end_step],
            }
        )

    # The reactive step, from the skill server's thread ---------------------------------------

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
                if self._cell is None:
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
                self._lent_news = exc
                self.wake()
                return ReactiveResult(fault='the cell ended during this step (its result says why)')

    def _reactive(self, obs: RobotState, call_controller: bool) -> ReactiveResult:
        self._send({'op': 'reactive', 'obs': obs, 'call_controller': call_controller})
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

    def _lend_channel(self, lend: bool) -> None:
        with self._channel_lock:
            self._channel_lent = lend

    def _raise_lent_news(self) -> None:
        """What ended the cell on the lent channel, raised on the cell's thread."""
        news, self._lent_news = self._lent_news, None
        if news is not None:
            self._lend_channel(False)
        if isinstance(news, _UnresponsiveError):
            raise _CellOver(None, self._lost(str(news)))
        if news is not None:
            raise news

    # The calls -------------------------------------------------------------------------------

    def _state(self) -> RobotState:
        return self.robot.state()

    def _look(self, camera: str) -> CameraView:
        return self.robot.views([camera], depth=True, segmentation=False)[0]

    def _scene(self) -> SceneReport:
        return self.measure_scene()

    def _show(self, image_or_camera, caption: str) -> None:
        cell, bounds = self._cell, self.bounds
        if len(cell.images) >= bounds.shown_images_per_cell:
            raise ValueError(
                f'show(): this cell already showed {len(cell.images)} images, the most a cell '
                f'may show (kernel.shown_images_per_cell)'
            )
        if self.shown_in_episode >= bounds.shown_images_per_episode:
            raise ValueError(
                f'show(): this episode already showed {self.shown_in_episode} images, the most '
                f'an episode may show (kernel.shown_images_per_episode)'
            )
        image = image_or_camera
        if isinstance(image, str):
            image = self._look(image).rgb
        array = np.asarray(image)
        if array.dtype == object or array.ndim not in (2, 3):
            raise ValueError(f'show() needs an image array (H x W or H x W x 3), got {array.shape}')
        if array.ndim == 3 and array.shape[2] not in (3, 4):
            raise ValueError(f'show() needs H x W x 3 or H x W x 4 colours, got {array.shape}')
        if array.shape[0] * array.shape[1] > bounds.shown_image_pixels or 0 in array.shape[:2]:
            raise ValueError(
                f'show(): an image of {array.shape[0]} x {array.shape[1]} pixels; at most '
                f'{bounds.shown_image_pixels} pixels (kernel.shown_image_pixels) and not empty'
            )
        if array.ndim == 2:
            array = array[..., None]
        colours = array[..., :3]
        if (
            colours.dtype != np.uint8
        ):  # float32 keeps the copy of a large image a third of float64's
            values = np.nan_to_num(colours.astype(np.float32), posinf=255.0, neginf=0.0)
            colours = np.clip(values, 0, 255).astype(np.uint8)
        rgb = np.broadcast_to(colours, (*array.shape[:2], 3)).copy()
        cell.images.append(ShownImage(program_text(caption, 500), rgb))
        self.shown_in_episode += 1

    def _locate(self, query: str = '') -> list[LocatedObject]:
        views = self.robot.views([], segmentation=self.perception.needs_segmentation)  # [] = all
        found = self.perception.locate(views, self.robot.state(), str(query))
        self.on_located(found)
        return found

    def measure_scene(self) -> SceneReport:
        """Every located object measured again and each arm's grip (the turn report)."""
        held = self._held()
        known = set(self.perception.known_ids())
        if not known:
            return SceneReport([], held, measured=False)
        objects = [o for o in self._locate() if o.id in known]
        return SceneReport(objects, held, measured=True)

    def _held(self) -> dict[str, str | None]:
        return {arm: getattr(self.contact.grips.get(arm), 'object_id', None) for arm in ARMS}

    def _scene_report(self, status: str) -> SceneReport:
        """The turn report of a cell that ended with `status`; after the episode's end no
        decision reads it, so nothing is measured."""
        if status == 'episode_ended':
            return SceneReport([], self._held(), measured=False)
        try:
            return self.measure_scene()
        except Exception as exc:  # the report must not lose the cell's result
            self.log({'call': '(kernel)', 'scene_error': f'{type(exc).__name__}: {exc}'})
            return SceneReport([], self._held(), measured=False)

    def _verify(self, claim: str) -> Verdict:
        return self.robot.verify(str(claim)[:2000])

    def _finish(self, summary: str = '') -> None:
        raise _Stop('finished', None, program_text(summary))
