"""The bounded-execution engine: one execution, tick by tick, ends with exactly one event.

An execution runs a `Motion` (what to command each tick) until the motion completes, the
program's `until` predicate holds, a guard or watch fires, link6 leaves the region, the shield
rejects a command, the episode ends, or `max_seconds` of simulated time pass. Time is counted
in ticks, never wall time. The result is one `Event` and a per-tick trace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from harness_reactive.guards import Watch
from harness_reactive.stage import ReactiveResult
from harness_types.execution import (
    CLIENT_CANCELLED,
    COMPLETED,
    EPISODE_ENDED,
    FORCE_LIMIT,
    GUARD_TRIGGERED,
    NOMINAL,
    PREDICATE_SATISFIED,
    REACTIVE_FAULT,
    REGION_EXIT,
    SHIELD_REJECTED,
    SKILL_ERROR,
    TIMEOUT,
    Execution,
    TraceTick,
)
from harness_types.robot_state import ARMS, RobotState, arm_slice, gripper_index

from harness_skills.port import ReactivePort, StationPort, TickOutcome

# "Stopped short of its target" (ARCHITECTURE.md section 5): after settling, further than this.
BLOCKED_JOINT_RAD = 0.05
BLOCKED_TCP_M = 0.01


@dataclass(frozen=True)
class Ending:
    """How a motion ended by itself: the event's name, its sentence and reasons."""

    event: str
    detail: str
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Options:
    """Bounds and reactive code of one execution."""

    max_seconds: float = 0.0  # 0 = the skill's default
    region: tuple[np.ndarray, np.ndarray] | None = None
    watches: tuple[Watch, ...] = ()
    reactive: bool = False
    execution_id: str = ''
    until: tuple[Watch, ...] = ()  # built-in `until`: a signal leaving its range satisfies it


class Motion:
    """What one skill commands. Subclasses fill `command` and say when they are done."""

    arm = ''
    default_seconds = 10.0

    def start(self, obs: RobotState, command: np.ndarray) -> None:
        """Called once with the first observation and the hold command."""

    def command(self, obs: RobotState, command: np.ndarray) -> None:
        """Write this tick's targets into `command` (14, pre-filled with the hold pose)."""
        raise NotImplementedError

    def finished(self, obs: RobotState) -> Ending | None:
        """How the motion ended (COMPLETED or BLOCKED) once it is over, else None."""
        raise NotImplementedError

    def controller_due(self, tick: int) -> bool:
        """Whether the program's controller is called on this tick of the execution (guards and
        `until` are checked on every tick)."""
        return True

    def apply_targets(
        self,
        targets: dict[str, np.ndarray],
        command: np.ndarray,
        port: StationPort,
        obs: RobotState,
    ) -> str:
        """Controller targets for motions that take them; returns an error sentence or ''."""
        return 'this skill takes no controller targets' if targets else ''

    def arms(self) -> tuple[str, ...]:
        """The arms this motion commands (regions and guard actions apply to them)."""
        return (self.arm,) if self.arm in ARMS else tuple(ARMS) if self.arm == 'both' else ()


@dataclass
class _Run:
    """One execution in progress."""

    result: Execution
    motion: Motion
    options: Options
    command: np.ndarray
    obs: RobotState
    guards: list[str] = field(default_factory=list)
    outcome: TickOutcome | None = None


class Engine:
    """Runs executions against a station port and, optionally, the program's reactive stage.
    `control_hz` turns simulated seconds into ticks (the embodiment's rate)."""

    def __init__(
        self,
        port: StationPort,
        control_hz: float,
        reactive: ReactivePort | None = None,
        max_contact_force_n: float = float('inf'),
    ) -> None:
        self.port = port
        self.control_hz = control_hz
        self.reactive = reactive
        # An arm that presses the table, or an object it does not hold, harder than this
        # ends the execution (FORCE_LIMIT): the shield bounds how deep a command goes, this
        # how hard the arm pushes before it gets there.
        self.max_contact_force_n = max_contact_force_n
        # Grippers keep their last commanded opening between executions: a closed gripper's
        # command is below its measured opening (it squeezes), and holding "the measured
        # opening" would let a grasped object slip. Forgotten when the episode restarts.
        self._grippers: dict[int, float] = {}
        self._last_step = -1

    def _hold_command(self, obs: RobotState) -> np.ndarray:
        if obs.step < self._last_step:
            self._grippers.clear()
        command = obs.measured.copy()
        for index, value in self._grippers.items():
            command[index] = value
        return command

    def _remember(self, command: np.ndarray, obs: RobotState) -> None:
        self._grippers = {gripper_index(arm): float(command[gripper_index(arm)]) for arm in ARMS}
        self._last_step = obs.step

    def run(
        self,
        skill: str,
        motion: Motion,
        options: Options,
        feedback: Callable[[int, RobotState], None] | None = None,
        cancelled: Callable[[int], bool | str] | None = None,
    ) -> Execution:
        """One execution: tick by tick until an ending; exactly one event. `cancelled(step)`,
        asked before each tick with the step measured last: why the execution stops there
        ('' or False: it goes on)."""
        obs = self.port.observe_state()
        result = Execution(skill, motion.arm, COMPLETED, start_step=obs.step, end_step=obs.step)
        if options.reactive and self.reactive is None:
            detail = 'reactive code was requested but no reactive_step service is available'
            return self._end(result, obs, SKILL_ERROR, detail)
        run = _Run(result, motion, options, self._hold_command(obs), obs)
        motion.start(obs, run.command)
        limit_s = options.max_seconds if options.max_seconds > 0 else motion.default_seconds
        for tick in range(max(1, int(round(limit_s * self.control_hz)))):
            why = cancelled(run.obs.step) if cancelled is not None else ''
            if why:
                self._stop(run.obs, run.command)
                detail = why if isinstance(why, str) else CLIENT_CANCELLED
                return self._end(result, run.obs, SKILL_ERROR, f'{detail}; the arm holds its pose')
            ended = (
                self._before_tick(run, skill, tick)
                or self._send(run)
                or self._after_tick(run, tick, feedback)
            )
            if ended is not None:
                return ended
        self._stop(run.obs, run.command)
        detail = f'{limit_s:g} s of simulated time passed before the motion completed'
        return self._end(result, run.obs, TIMEOUT, detail)

    def _before_tick(self, run: _Run, skill: str, tick: int) -> Execution | None:
        """The program's reactive stage (guards, until, controller), then this tick's command."""
        run.guards = []
        targets: dict[str, np.ndarray] = {}
        obs, command, motion = run.obs, run.command, run.motion
        if run.options.reactive:
            r: ReactiveResult = self.reactive.step(
                run.options.execution_id, skill, obs, motion.controller_due(tick)
            )
            run.guards += list(r.evaluated)
            if r.fault:
                self._stop(obs, command)
                return self._end(run.result, obs, REACTIVE_FAULT, r.fault)
            if r.guard_fired:
                return self._guard(
                    run.result, obs, command, motion, r.guard_fired, r.guard_action, r.guard_detail
                )
            if r.until_satisfied:
                self._stop(obs, command)
                return self._end(run.result, obs, PREDICATE_SATISFIED, 'the until predicate held')
            targets = r.targets
        motion.command(obs, command)
        if targets:
            error = motion.apply_targets(targets, command, self.port, obs)
            if error:
                self._stop(obs, command)
                return self._end(run.result, obs, SKILL_ERROR, error)
        return None

    def _send(self, run: _Run) -> Execution | None:
        """The tick through the shield; an ending when it was refused."""
        outcome = self.port.tick(run.command.copy())
        run.outcome = outcome
        if outcome.accepted:
            return None
        obs = run.obs
        run.result.trace.append(
            TraceTick(obs.time, obs.measured, run.command.copy(), tuple(run.guards))
        )
        if outcome.episode_ended:
            why = outcome.reasons[0] if outcome.reasons else 'the episode ended'
            return self._end(run.result, outcome.observation, EPISODE_ENDED, why)
        reasons = tuple(outcome.reasons)
        # The refused command is not applied; those before it were (the model had read "the
        # arm did not move" after a motion that had taken the arm most of the way).
        accepted = len(run.result.trace) - 1
        where = (
            'the arm did not move'
            if accepted == 0
            else f'it was not applied, and the arm holds where the {accepted} accepted '
            f'tick{"s" if accepted > 1 else ""} before it took it'
        )
        return self._end(
            run.result,
            outcome.observation,
            SHIELD_REJECTED,
            f'the shield rejected the command; {where}: ' + '; '.join(reasons),
            reasons,
        )

    def _after_tick(self, run: _Run, tick: int, feedback) -> Execution | None:
        """The tick happened: the episode's end, watches, the region, the motion's own end,
        the built-in `until`."""
        outcome, command, motion, result = run.outcome, run.command, run.motion, run.result
        obs = run.obs = outcome.observation
        self._remember(command, obs)
        result.trace.append(TraceTick(obs.time, obs.measured, command.copy(), tuple(run.guards)))
        if feedback is not None:
            feedback(tick, obs)
        if outcome.episode_ended:
            why = outcome.reasons[0] if outcome.reasons else 'the episode ended'
            return self._end(result, obs, EPISODE_ENDED, why)
        for arm in motion.arms():
            force = obs.arm(arm).contact_force
            if force > self.max_contact_force_n:
                self._stop(obs, command)
                detail = (
                    f'the {arm} arm pressed with {force:.1f} N, over the '
                    f'{self.max_contact_force_n:g} N limit (shield.max_contact_force_n); it '
                    'holds where it is'
                )
                return self._end(result, obs, FORCE_LIMIT, detail)
        # the signals only when a watch or `until` reads them (~15 us a tick)
        signals = obs.signals() if run.options.watches or run.options.until else None
        for watch in run.options.watches:
            run.guards.append(watch.name)
            detail = watch.check(signals)
            if detail:
                return self._guard(result, obs, command, motion, watch.name, watch.action, detail)
        if run.options.region is not None:
            lo, hi = run.options.region
            for arm in motion.arms():
                p = obs.arm(arm).link6_position
                if np.any(p < lo) or np.any(p > hi):
                    self._stop(obs, command)
                    detail = f'{arm} link6 at ({p[0]:.3f}, {p[1]:.3f}, {p[2]:.3f}) left the region'
                    return self._end(result, obs, REGION_EXIT, detail)
        done = motion.finished(obs)
        if done is not None:
            return self._end(result, obs, done.event, done.detail, done.reasons)
        for watch in run.options.until:
            detail = watch.check(signals)
            if detail:
                self._stop(obs, command)
                return self._end(result, obs, PREDICATE_SATISFIED, f'until: {detail}')
        return None

    # Endings ------------------------------------------------------------------------------

    def _end(
        self,
        result: Execution,
        obs: RobotState,
        name: str,
        detail: str,
        reasons: tuple[str, ...] = (),
    ) -> Execution:
        result.event, result.detail = name, detail
        result.reasons = tuple(reasons) or ((detail,) if name not in NOMINAL else ())
        result.time = obs.time
        result.end_step = obs.step
        return result

    def _stop(self, obs: RobotState, command: np.ndarray) -> None:
        """Command the measured pose once so the arm stops where it is (if the shield agrees)."""
        hold = command.copy()
        measured = obs.measured
        for arm in ARMS:
            hold[arm_slice(arm)] = measured[arm_slice(arm)]
        outcome = self.port.tick(hold)
        if outcome.accepted:
            command[:] = hold
            self._remember(hold, outcome.observation)

    def _guard(
        self,
        result: Execution,
        obs: RobotState,
        command: np.ndarray,
        motion: Motion,
        name: str,
        action: str,
        detail: str,
    ) -> Execution:
        if action == 'stop':
            self._stop(obs, command)
        elif action == 'open_gripper' and motion.arms():
            opened = command.copy()
            for arm in motion.arms():
                opened[gripper_index(arm)] = 1.0
            for _ in range(10):
                if not self.port.tick(opened).accepted:
                    break
        # 'hold': the actuators keep the last command; nothing to send.
        event = action if action not in ('stop', 'hold', 'open_gripper') else GUARD_TRIGGERED
        return self._end(result, obs, event, f'{name}: {detail} (action {action})')
