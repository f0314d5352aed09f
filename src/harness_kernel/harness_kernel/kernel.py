"""The kernel core (trusted): runs an episode's cells in the sandboxed program process and
does everything that touches the robot for it. No rclpy: the robot comes in as a `RobotPort`
(the kernel node implements it over ROS).

One thread runs a cell (`run_cell`): it sends the cell to the program process and serves the
program's requests (API calls, dispatched as the API table says) until the cell is done; the
channel, the cell's time and the reactive steps other threads ask for are the `ProgramLink`'s
(program_link.py). Between cells the program process is frozen. Everything reported
(executions, events handled, grips, the scene, the output, kernel.log) is measured here, never
taken from the program.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from harness_perception.backends.oracle import OraclePerception
from harness_policy.catalog import Catalog
from harness_reactive.stage import ReactiveResult
from harness_skills.skill_table import SKILLS
from harness_types.camera import CameraView
from harness_types.cell import CellResult, ShownImage
from harness_types.config import KernelConfig
from harness_types.execution import EPISODE_ENDED, Execution, skill_error
from harness_types.robot_state import ARMS, RobotState
from harness_types.scene import ClaimAnswer, LocatedObject, SceneReport

from harness_kernel.api_table import API, API_NAMES
from harness_kernel.bounds import (
    ProgramBounds,
    bounded_record,
    program_text,
)
from harness_kernel.call_arguments import checked
from harness_kernel.channel import ChannelClosedError, ChannelError
from harness_kernel.contact import ContactSkills
from harness_kernel.foresight import Foresight
from harness_kernel.learned import (
    POLICY_TO_END_SECONDS,
    LearnedHalf,
)
from harness_kernel.program_frames import loggable, program_done
from harness_kernel.program_host import (
    ProgramHost,
    ProgramStartError,
)
from harness_kernel.program_link import CellOver, CellStop, ProgramLink, RunningCell
from harness_kernel.robot_port import Idle, RobotPort
from harness_perception import Perception

HOLDING_FORCE_N = 0.5  # the wrap-up keeps a gripper closed that feels at least this much


class _CallRefusedError(Exception):
    """A call the kernel does not serve (reported to the program as a RuntimeError)."""


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
            # measured: a scene variation may have moved the table
            lambda: self.perception.table_top_z(table_top_z),
            closed_below,
        )
        self.learned = LearnedHalf(catalog)
        self.foresight = Foresight(
            robot, self.perception, self.learned, log, world_model_shadow, control_hz
        )
        # Who does what the API table says a name's handler does (its `Kernel._<name>` for
        # 'kernel'); the skill server's names go through `_skill_call`.
        self._handlers = {
            'contact': self.contact,
            'learned': self.learned,
            'foresight': self.foresight,
        }
        self._call_lock = threading.Lock()
        self.link = ProgramLink(
            host, self.bounds, cell_timeout_seconds, self.reactive_deadline, self._handle_call, log
        )

    # Starting and stopping -------------------------------------------------------------------

    def start(self) -> dict:
        """Start the program process (frozen until the first cell); returns its sandbox."""
        return self.link.start()

    def close(self) -> None:
        """The episode's end: its perception passes counted in the log (own, repeated, and
        shared: taken from another perception of the station, this episode's or an earlier
        one's), the program's link closed."""
        try:
            self.log({'call': '(kernel)', 'perception_passes': dict(self.perception.pass_counts)})
        finally:
            self.link.close()

    def reactive_step(self, obs: RobotState, call_controller: bool) -> ReactiveResult:
        """The program's guards, until and controller for one tick (thread-safe; see
        ProgramLink.reactive_step)."""
        return self.link.reactive_step(obs, call_controller)

    # Cells -----------------------------------------------------------------------------------

    def run_cell(self, code: str, max_calls: int = 0) -> CellResult:
        """Run `code` in the program's namespace; the result is the kernel's own account.
        `max_calls`: the most API calls served in the cell (0: no bound)."""
        with self._call_lock:
            link = self.link
            cell = RunningCell(time.monotonic() + self.cell_timeout, max_calls=max_calls)
            link.begin(cell)
            cell.workspace_start = link.workspace()
            # (the first running look a check's interval on: a program may remove what puts
            # its workspace over a bound before it is stopped for it)
            cell.workspace_checked = time.monotonic()
            status, traceback, summary, restored = 'error', '', '', []
            try:
                if not self.host.alive():
                    link.restart(cell)
                self.host.thaw()
                link.cells += 1
                link.send({'op': 'cell', 'code': code, 'cell': link.cells})
                status, traceback, summary, restored = program_done(link.serve_until('done'))
            except CellOver as over:
                if over.done is not None:
                    status, traceback, _, _ = program_done(over.done)
                else:
                    traceback = over.error
            except ChannelClosedError:
                self.host.wait(1.0)
                traceback = link.lost(link.death())
            except (ChannelError, ProgramStartError, OSError) as exc:
                traceback = link.lost(f'the program process failed: {exc}')
            finally:
                link.drain_output(cell)
                self.host.freeze()
                link.cell = None
            own = traceback.strip()
            if cell.interrupted_at:
                # Measured at its end too: what a cell wrote in its grace after the last look
                # (a sparse file's size counts at once) is said, not kept unseen.
                grown = link.workspace().over(self.bounds, since=cell.workspace_interrupted)
                said = link.interruption(cell, written_on=grown)
                if own in ('CellTimeout', 'WorkspaceFull', 'ReactiveTimeout', ''):
                    traceback = said
                elif not own.startswith(('CellTimeout:', 'WorkspaceFull:')) or grown:
                    # why it was stopped, then what the program raised as it was
                    traceback = f'{said}\n{traceback}'
            else:
                # A cell that ends between two of the running checks (returning or raising) is
                # measured here: the next cell's start would take the overfull workspace as is.
                over = link.workspace().over(self.bounds, since=cell.workspace_start)
                if over:
                    status = 'error'
                    said = f"WorkspaceFull: {over} at the cell's end. Delete files to write more"
                    traceback = f'{said}\n{traceback}' if traceback else said
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

    def _trusted_status(self, cell: RunningCell, status: str, summary: str) -> tuple[str, str]:
        """What the kernel saw wins over what the program says: an escalation, the episode's
        end or finish() stop the cell whatever the program did after; a program that claims
        one of these without the kernel having seen it, or that was interrupted (its time ran
        out, its workspace filled), ran an ordinary error."""
        stop = cell.stop
        if stop is not None:
            if stop.kind == 'handler_error':
                return 'error', ''
            return stop.kind, stop.text if stop.kind == 'finished' else ''
        if status in ('escalated', 'episode_ended', 'finished') or cell.interrupted_at:
            return 'error', ''  # (an interrupted cell that caught it and returned did not end well)
        return status, ''

    def wrap_up(self) -> CellResult:
        """After finish: open every gripper that holds nothing (neither a grip the kernel
        recorded nor a felt grip force), then both arms home. Runs here, not in the program:
        the program's guards, controllers and handlers do not apply, and it is frozen."""
        with self._call_lock:
            cell = self.link.cell = RunningCell(time.monotonic() + self.cell_timeout)
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
            except CellStop as stop:
                cell.stop, status = stop, stop.kind
            finally:
                self.link.cell = None
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
            cell = self.link.cell = RunningCell(time.monotonic() + self.cell_timeout)
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
                    cell.stop, status = CellStop('episode_ended', e), 'episode_ended'
                elif not e.ok:
                    cell.stop, status = CellStop('escalated', e), 'escalated'
            except (RuntimeError, ValueError, KeyError, TypeError) as exc:
                # the skill server gone or not answering: the driver still finishes the episode
                status, traceback = 'error', f'policy-to-end could not run: {exc}'
            finally:
                self.link.cell = None
            return CellResult(
                status=status,
                output=cell.output.text(),
                traceback=traceback,
                stopped_by=cell.stop.execution if cell.stop else None,
                executions=cell.executions,
                scene=self._scene_report(status),
                **self._strategy_fields(),
            )

    def _wrap_up_step(self, cell: RunningCell, skill: str, args: dict) -> None:
        e = self.robot.execute(skill, args, False, Idle())
        cell.executions.append(e)
        self._log_execution(e)
        if e.event == EPISODE_ENDED:  # e.g. homing with the cube lifted it high enough
            raise CellStop('episode_ended', e)
        if not e.ok:
            raise CellStop('escalated', e)

    # API calls -------------------------------------------------------------------------------

    def _handle_call(self, message: dict, allowed: bool) -> None:
        cell = self.link.cell
        name = message.get('name')
        args = message.get('args')
        reply: dict = {'op': 'reply', 'id': message.get('id')}
        started = time.monotonic()
        record: dict = {'call': str(name)[:64], 'args': loggable(args)}
        try:
            if cell.stop is not None:
                raise cell.stop
            if cell.interrupted_at:  # the grace after an interrupt is for stopping, not moving
                raise _CallRefusedError(f'{name}() refused: {self.link.interruption(cell)}')
            cell.calls += 1
            if cell.max_calls and cell.calls > cell.max_calls:
                raise _CallRefusedError(
                    f'{name}() refused: this cell may make {cell.max_calls} API '
                    f'call{"s" if cell.max_calls > 1 else ""} (one per reply on the skills '
                    'interface)'
                )
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
        except CellStop as stop:
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
        except (CellOver, ChannelError, OSError):
            raise  # the cell or its process is over: run_cell says so
        except Exception as exc:  # an input no check foresaw (or a bug): told, and in step
            why = f'{type(exc).__name__}: {exc}'[:2000]
            reply.update(error='RuntimeError', message=f'{name}() failed in the kernel: {why}')
            record.update(raised=type(exc).__name__, detail=why)
        record['wall_s'] = round(time.monotonic() - started, 4)
        self._record(record)
        self.link.send(reply)

    def _named_call(self, name: str, args: dict) -> Any:
        """A name the kernel, its contact skills or its learned half handle: the arguments
        bound to the stub and checked by kind, then the handler's method of that name."""
        entry = API[name]
        try:
            bound = entry.signature().bind(**args)
        except TypeError as exc:
            raise TypeError(f'{name}(): {exc}') from None
        bound.apply_defaults()
        arguments = checked(entry, dict(bound.arguments))
        handler = self._handlers.get(entry.handler)
        method = getattr(self, f'_{name}') if handler is None else getattr(handler, name)
        return method(**arguments)

    def _skill_call(self, name: str, args: dict) -> Execution:
        spec, entry = SKILLS[name], API[name]
        try:
            bound = entry.kernel_signature().bind(**args)
        except TypeError as exc:
            raise TypeError(f'{name}(): {exc}') from None
        bound.apply_defaults()
        # Checked by kind as every name's are: a goal's fields are set from them, and a wrong
        # type in a message's field aborts the process that converts it (rosidl's C assert).
        arguments = checked(entry, dict(bound.arguments))
        if name == 'run_policy':  # the catalogue's entry goes with the goal
            arguments.update(
                self.learned.policy_arguments(arguments['name'], arguments['instruction'])
            )
        try:
            spec.goal(arguments)  # the arguments must make a goal before anything moves
        except (TypeError, ValueError, KeyError, AssertionError, IndexError, OverflowError) as exc:
            raise ValueError(f'{name}(): bad arguments: {exc}') from None
        return self._execute(name, arguments)

    def _execute(self, skill: str, args: dict) -> Execution:
        """One skill execution for the running cell, through the program's handlers."""
        cell = self.link.cell
        refused = self.learned.refusal(skill)
        if refused:
            return self._fail(skill, str(args.get('arm', '')), refused)
        reactive = cell.reactive or API[skill].reactive
        shadow = self.foresight.shadow_predict(args) if skill == 'run_policy' else None
        # The skill server calls the reactive stage every tick of a reactive execution, so the
        # channel is read at least that often while it is lent.
        self.link.lend_channel(reactive)
        try:
            e = self.robot.execute(skill, args, reactive, self.link)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f'{skill}(): {exc}') from None
        finally:
            self.link.lend_channel(False)  # waits for a step in progress
        self.link.raise_lent_news()
        if shadow is not None:
            self.foresight.shadow_score(shadow, e)
        cell.executions.append(e)
        self._log_execution(e)
        return self._dispatch(e)

    def _fail(self, skill: str, arm: str, detail: str) -> Execution:
        """A contact skill that could not do what was asked: SKILL_ERROR, through the handlers."""
        state = self.robot.state()
        e = skill_error(skill, arm, detail, state.step, state.time)
        self.link.cell.executions.append(e)
        self._log_execution(e)
        return self._dispatch(e)

    def _dispatch(self, e: Execution) -> Execution:
        if e.ok:
            return e
        if e.event == EPISODE_ENDED:
            raise CellStop('episode_ended', e)
        self.link.send({'op': 'event', 'execution': e})
        answer = self.link.serve_until('handled')
        if answer.get('error'):
            raise CellStop('handler_error', e, str(answer['error'])[:2000])
        if answer.get('absorbed') is True:
            e.handled = True
            self.link.cell.events_handled += 1
            return e
        raise CellStop('escalated', e)

    def _record(self, record: dict) -> None:
        """A kernel.log record of the running cell's calls and executions: at most
        log_records_per_cell of them are written, each clipped; the rest are counted."""
        cell = self.link.cell
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

    # The calls -------------------------------------------------------------------------------

    def _state(self) -> RobotState:
        return self.robot.state()

    def _look(self, camera: str) -> CameraView:
        return self.robot.views([camera], depth=True, segmentation=False)[0]

    def _scene(self) -> SceneReport:
        return self.measure_scene()

    def _show(self, image_or_camera, caption: str) -> None:
        cell, bounds = self.link.cell, self.bounds
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

    def _verify(self, claim: str) -> ClaimAnswer:
        return self.robot.verify(str(claim)[:2000])

    def _finish(self, summary: str = '') -> None:
        raise CellStop('finished', None, program_text(summary))
