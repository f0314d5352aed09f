"""The agent operator's session over a live station: what `harness mcp`'s tools do. Pure: the
station comes in as the episode's `EpisodeStation` (harness_bringup's EpisodeGraph over ROS),
the verifier's eyes as an `EvidenceTaker`.

The contract, against the ways agents fail:
- every action returns two fields, `executor_status` (from the motion's events) and `verdict`
  (the tiered verifier's measurement of the action's intended effect); ok needs both;
- the same key twice returns the first trial's record and moves nothing;
- looking again with nothing moved, repeating a failed action and switching executors each
  spend a budget the agent cannot raise; an exhausted budget opens a ticket only the owner
  resolves;
- everything goes into the journal, and a new session resumes from it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from harness_bench.randomization import axes_name
from harness_bench.task import Task
from harness_bench.verifier import (
    AMBIGUOUS,
    Evidence,
    Verdict,
    verify,
)
from harness_kernel.api_table import effect_claims
from harness_perception.evidence import EvidenceTaker, evidence_json
from harness_recording.lerobot import DatasetWriter
from harness_recording.run_folder import RunFolder
from harness_recording.trial_data import decoded, observed_span, trial_of
from harness_recording.trials import save_ticks, ticks_of
from harness_types.cell import CellResult
from harness_types.config import shown
from harness_types.execution import CUT_FROM_OUTSIDE, STOPPED_FROM_OUTSIDE

from harness_operator.actions import (
    OBJECT_ARGS,
    SKILLS,
    Action,
    ActionError,
    cell_source,
    parse_action,
    policy_source,
    query_of,
    same_action,
)
from harness_operator.budgets import BudgetRefusedError, OperatorBudgets
from harness_operator.charges import Charges
from harness_operator.journal import Journal
from harness_operator.preferences import preferred_executor, verified_preferences
from harness_operator.sight import Sight
from harness_operator.trial import TrialRecord, executor_status
from harness_operator.undo import UNDO, inverse_of

EXECUTORS = ('auto', 'skill')
MAX_KEY = 200  # characters of an action's key


class OperatorError(RuntimeError):
    """A call the session refuses (nothing moved); the message says why."""


@dataclass(frozen=True)
class SessionSpec:
    task: str
    layout: int
    seed: int
    action_timeout_s: float = 120.0
    randomize: tuple[str, ...] = ()  # scene randomisation axes (harness_bench.randomization)

    @property
    def goal(self) -> dict:
        """What a journal is for: the task, layout and seed, and the randomised axes if any
        (a journal written before randomisation has none)."""
        goal = {'task': self.task, 'layout': self.layout, 'seed': self.seed}
        return goal | ({'randomize': ','.join(self.randomize)} if self.randomize else {})


class OperatorSession:
    """`start()` resets the station (or resumes the journal's run), then the tools' methods.
    Calls are serialised (one motion at a time) except `estop`, which is taken at once."""

    def __init__(
        self,
        station,
        eyes: EvidenceTaker,
        journal: Journal,
        task: Task,
        spec: SessionSpec,
        run: RunFolder,
        log: Callable[[str], None] = print,
        policies: tuple[str, ...] = (),
        replay: bool = True,
        policy_versions: dict[str, int] | None = None,
    ) -> None:
        self.policies = policies  # the catalogue's policies (none: the learned half is off)
        # each policy's catalogue version: a preference set for another one is unverified
        self.policy_versions = dict(policy_versions or {})
        # Resuming runs the journal's trials again: only in simulation, where the reset world
        # is the same; on hardware the world is as the last session left it.
        self.replay = replay
        self.station = station
        self.eyes = eyes
        self.journal = journal
        self.budgets: OperatorBudgets = journal.budgets
        self.charges = Charges(journal, run, log)
        self.task = task
        self.spec = spec
        self.run = run
        self.log = log
        self.instruction = ''
        self.held: dict[str, str] = {}  # arm -> the query of what it picked
        self.sight = Sight(station, eyes, self._run_code)
        self.finished = False
        self.estopped = False
        self._lock = threading.Lock()
        self._trials_this_session = 0
        self.dataset: DatasetWriter | None = None  # <run>/lerobot, one episode per trial
        self._before: dict[str, Evidence | None] = {}  # each trial's view before it, by key
        self.resumed: dict = {}  # what start() resumed, and what came out different

    # Start and resume ---------------------------------------------------------------------

    def start(self) -> dict:
        """Reset the station; with a journal of earlier sessions, run their trials again in
        order (the simulator is deterministic, so the world comes back as they left it) and
        keep their records. Returns what the journal holds."""
        s = self.spec
        goal = s.goal
        self.journal.check_goal(goal)
        start = self.station.reset(s.task, s.layout, s.seed, s.randomize)
        self.instruction = start.instruction
        self.station.start_kernel(self.run.workspace, self.run.kernel_log)
        self.eyes.mark_home()
        if self.policies:  # the strategy comes first: C lets policies and skills both act
            kind, said = self.task.kind, start.instruction
            self._run_code(
                f"try:\n    print(start('C', {kind!r}, {said!r}))\nexcept ValueError:\n"
                f"    print(start('B', {kind!r}))\n"
            )
        if self.journal.state.goal is None:
            self.journal.write(
                {'type': 'goal', **goal, 'instruction': start.instruction}
                | {'description': start.description}
            )
        resumed = list(self.journal.state.trials.values())
        self.journal.write(
            {'type': 'session', 'run_folder': str(self.run.path), 'resumed_trials': len(resumed)}
        )
        for p in self.preferences():  # a policy changed since it was set: said in the journal
            if not p['verified']:
                self.journal.write({'type': 'event', 'what': 'preference_unverified', **p})
        mismatches = self._replay(resumed) if self.replay else []
        # a step that started moving but has no record (its session died mid-motion): the
        # world of the replay lacks it
        mismatches += [
            f'{trial_id} ({key}) started but was never recorded: the replay lacks it'
            for key, trial_id in self.journal.state.dispatched.items()
            if key not in self.journal.state.trials
        ]
        if resumed:
            self.run.event(
                {'type': 'resumed', 'trials': len(resumed), 'replayed': self.replay}
                | {'mismatches': mismatches}
            )
            self.log(f'resumed {len(resumed)} trials from {self.journal.path}')
        if self.journal.state.estop_engaged():
            self.estop(True)  # an emergency stop outlives the session that engaged it
        if self.journal.state.finished():
            self.finished = True
        self.resumed = {'resumed_trials': len(resumed)} | (
            {'resume_mismatches': mismatches} if mismatches else {}
        )
        return {'instruction': self.instruction} | self.resumed

    def _replay(self, records: list[TrialRecord]) -> list[str]:
        """Run the journal's trials again in order, settling after each as they did (the
        simulator is deterministic); what comes out different is listed. An emergency stop
        ends the replay."""
        mismatches = []
        for record in records:
            if self.estopped:
                mismatches.append(f'replay stopped by the emergency stop before {record.trial_id}')
                break
            action = parse_action(record.action)
            stopped = _ended_by(record, STOPPED_FROM_OUTSIDE)
            if stopped:  # (by the emergency stop, or the cell's timeout): ended there again
                self.station.estop_at(record.end_step, _ended_by(record, CUT_FROM_OUTSIDE))
            try:
                cell = self._execute(action, record.executor)
            finally:
                if stopped:
                    self.station.estop_at(None)
                    if not self.estopped:  # (engaged meanwhile: it stays)
                        self.station.estop(False)
            self.sight.settle()
            status, _ = executor_status(cell)
            arm = _moved_arm(e.arm for e in cell.executions)
            self._track(action, arm, record.verdict)
            step = self.station.robot().step
            if status != record.executor_status or step != record.end_step:
                mismatches.append(
                    f'{record.trial_id}: {record.executor_status} at step {record.end_step} '
                    f'then, {status} at step {step} now'
                )
        return mismatches

    def executors(self) -> tuple[str, ...]:
        return (*EXECUTORS, *(f'policy:{p}' for p in self.policies))

    def list_policies(self) -> str:
        """The catalogue as list_policies() gives it to programs."""
        if not self.policies:
            raise OperatorError('policies are not enabled (harness mcp --policies)')
        with self._lock:
            cell = self._run_code('print(list_policies())')
        if cell.status != 'ok':
            raise OperatorError(f'list_policies failed: {cell.traceback or cell.output}')
        return cell.output

    def summary(self) -> dict:
        """summary.json of the session's run folder as it stands (written after every trial,
        so a session killed between calls still leaves one)."""
        s = self.spec
        return {
            'task': s.task,
            'layout': s.layout,
            'seed': s.seed,
            'randomize': axes_name(s.randomize),
            'model': 'mcp',
            'agent': 'an agent operator over MCP',
            'status': 'finished' if self.finished else 'running',
            'journal': str(self.journal.path),
            'trials': self._trials_this_session,
            'dataset': self.dataset.summary() if self.dataset is not None else None,
            'budgets_left': self.budgets.left(),
            'open_tickets': [t.id for t in self.budgets.tickets if t.status == 'open'],
        }

    # Tools ---------------------------------------------------------------------------------

    def observe(self) -> tuple[dict, list]:
        """The robot and the objects the verifier's perception finds now, with the head
        camera's view (objects outlined). Looking again with nothing moved since the last look
        spends the re-observe budget."""
        with self._lock:
            self.journal.refresh()
            now = self.station.robot().step
            if self.sight.seen_since_last_motion(now):
                self.charges.charge(
                    'reobserve', 'observe again with nothing moved since the last look'
                )
            evidence = self.sight.look()
            views = self.station.cameras(['cam_head'])
            self.journal.write({'type': 'event', 'what': 'observe', 'step': now})
            return self._observation(evidence), views

    def do_action(self, action, executor: str = 'auto', key: str = '') -> TrialRecord:
        with self._lock:
            return self._do(action, executor, key)

    def run_batch(self, actions: list) -> tuple[list[TrialRecord], str]:
        """Each of `actions` ({action, executor, key}) in order, stopping after the first that
        is not ok. Every item is checked before the first runs; a refusal on the way (a budget,
        the emergency stop) ends the batch and is returned beside the trials that ran."""
        if not isinstance(actions, list) or not actions:
            raise OperatorError('run_batch needs a non-empty list of {action, executor, key}')
        for n, item in enumerate(actions):
            if not isinstance(item, dict) or 'action' not in item or 'key' not in item:
                raise OperatorError(
                    f'batch item {n} must be an object with "action" and "key" '
                    '(and optionally "executor")'
                )
            try:
                self._check_key(item['key'])
                self._checked(item['action'], item.get('executor', 'auto'))
            except OperatorError as exc:
                raise OperatorError(f'batch item {n}: {exc}') from None
        with self._lock:
            out: list[TrialRecord] = []
            for n, item in enumerate(actions):
                try:
                    record = self._do(item['action'], item.get('executor', 'auto'), item['key'])
                except (OperatorError, BudgetRefusedError) as exc:
                    return out, f'batch item {n} refused, nothing moved: {exc}'
                out.append(record)
                if not record.ok:
                    break
            return out, ''

    def recheck(self, key: str) -> dict:
        """Judge an ambiguous or stale trial's intended effect again from fresh views (the arms
        held still first): the one way on from such a verdict, and it spends the re-observe
        budget. The trial's record stays what it was; the re-check is journaled beside it."""
        with self._lock:
            self.journal.refresh()
            record = self.journal.state.trials.get(key)
            if record is None:
                raise OperatorError(f'no trial has the key {shown(key)}')
            if record.verdict not in ('ambiguous', 'stale'):
                raise OperatorError(
                    f'trial {record.trial_id} is {record.verdict}: only an ambiguous or stale '
                    'verdict is checked again'
                )
            if self.sight.last_motion_step > record.end_step:
                raise OperatorError(
                    f'the robot moved since trial {record.trial_id}: its effect cannot be told '
                    'apart from what came after (observe to see the scene)'
                )
            self.charges.charge('reobserve', f'recheck {record.trial_id}')
            action = parse_action(record.action)
            arm = _moved_arm(e['arm'] for e in record.executions)
            claims = self._claims(action, arm)
            verdict = verify(claims, self.sight.at_rest(self._before.get(key)))
            self._track(action, arm, verdict.verdict)
            out = {'key': key, 'trial_id': record.trial_id} | verdict.as_dict()
            out |= {'ok': record.executor_status == 'done' and verdict.verdict == 'satisfied'}
            out['budgets_left'] = self.budgets.left()
            self.journal.write({'type': 'event', 'what': 'recheck', **out})
            self.run.event({'type': 'recheck', **out})
            return out

    def undo(self) -> dict:
        """Take the last action back by its inverse (a pick: the object put back where it
        stood; a move: the TCP back where it was), as a trial of its own under the key
        'undo:<its key>', spending the undo budget; or refuse, saying why there is none."""
        with self._lock:
            self.journal.refresh()
            trials = list(self.journal.state.trials.values())
            if not trials:
                raise OperatorError('nothing to undo: no action has run')
            last = trials[-1]
            if last.key.startswith(UNDO):
                raise OperatorError(
                    f'the last action ({last.trial_id}) was an undo: an undo is not taken back '
                    '(do the action again)'
                )
            if last.inverse is None:
                raise OperatorError(
                    f'{last.trial_id} ({parse_action(last.action).describe()}) cannot be undone: '
                    f'{last.no_inverse or "it has no inverse"}'
                )
            self._refuse_if_done()
            self._refuse_if_spent()
            key = f'{UNDO}{last.key}'
            if key in self.journal.state.trials:
                raise OperatorError(f'{last.trial_id} was undone already ({key})')
            # Refused here, before the undo budget is spent: the inverse as an action, and a
            # budget it would spend itself (a retry of an inverse that failed before).
            inverse, executor = self._checked(last.inverse, 'skill')
            for failure_class, reason in self.charges.classes_for(inverse, executor):
                self.charges.refuse_if_spent(failure_class, reason)
            self.charges.charge('undo', f'undo {last.trial_id}')
            record = self._do(last.inverse, 'skill', key, undo=True)
            out = {'undone': last.trial_id, 'inverse': last.inverse, 'trial': record.as_dict()}
            self.journal.write({'type': 'event', 'what': 'undo', 'of': last.key})
            self.run.event({'type': 'operator', 'what': 'undo', 'of': last.trial_id})
            return out | {'budgets_left': self.budgets.left()}

    def refill_pause(self, reason: str) -> dict:
        """Ask the station's owner to refill it (objects used up, knocked off the table),
        spending the refill_pause budget; journaled. In simulation nothing is refilled."""
        with self._lock:
            if not isinstance(reason, str) or not reason.strip() or len(reason) > 500:
                raise OperatorError('reason must say what to refill (1 to 500 characters)')
            self._refuse_if_done()
            self.charges.charge('refill_pause', reason.strip())
            self.journal.write({'type': 'event', 'what': 'refill_pause', 'reason': reason})
            self.run.event({'type': 'operator', 'what': 'refill_pause', 'reason': reason})
            return {
                'paused_for_refill': reason.strip(),
                'note': 'in simulation nothing is refilled: the scene is as it was; on hardware '
                'the owner refills the station and the run goes on',
                'budgets_left': self.budgets.left(),
            }

    def prefer(self, executor: str, skill: str) -> dict:
        """ "Prefer `executor` for `skill`": do_action with executor 'auto' runs that skill with
        it while the preference is verified (set for the policy's current catalogue version);
        journaled, so a later session keeps it. 'auto' as the executor clears it."""
        with self._lock:
            if skill not in SKILLS:
                raise OperatorError(f'skill must be one of {", ".join(SKILLS)}, not {shown(skill)}')
            if executor not in self.executors():
                raise OperatorError(
                    f'executor must be one of {", ".join(self.executors())}, not {shown(executor)}'
                )
            policy = executor.split(':', 1)[1] if executor.startswith('policy:') else ''
            self.journal.write(
                {
                    'type': 'preference',
                    'skill': skill,
                    'executor': executor,
                    'policy_version': self.policy_versions.get(policy) if policy else None,
                }
            )
            return {'preferences': self.preferences()}

    def preferences(self) -> list[dict]:
        """Every preference with whether it is verified (harness_operator.preferences)."""
        return verified_preferences(
            self.journal.state.preferences, self.policies, self.policy_versions
        )

    def estop(self, engage: bool = True) -> dict:
        """Engage (or release) the emergency stop: a running motion stops at its next tick and
        holds its pose; no motion starts while it is engaged."""
        self.estopped = engage
        self.station.estop(engage)
        what = 'estop' if engage else 'estop_released'
        self.journal.write({'type': 'event', 'what': what, 'step': self.station.robot().step})
        self.run.event({'type': 'operator', 'what': what})
        return {'estop': engage}

    def finish(self) -> dict:
        """End the run: the station opens idle grippers and sends the arms home; the verifier
        judges the task's goal (tiers 1 and 2). The ground truth goes to the run folder only."""
        with self._lock:
            self._refuse_if_done()
            cell = self.station.wrap_up(self.spec.action_timeout_s + 60.0)
            self.sight.after(cell)
            verdict = verify(self.task.goal, self.sight.at_rest())
            self.finished = True
            self.journal.write({'type': 'event', 'what': 'finish', 'verdict': verdict.as_dict()})
            self.run.event({'type': 'goal_verdict', 'phase': 'end', **verdict.as_dict()})
            return {'goal_verdict': verdict.as_dict(), 'budgets_left': self.budgets.left()}

    def journal_view(self) -> dict:
        self.journal.refresh()
        st = self.journal.state
        return {
            'goal': st.goal,
            'sessions': st.sessions,
            'progress': [
                {'trial_id': t.trial_id, 'key': t.key, 'action': t.action}
                | {'executor_status': t.executor_status, 'verdict': t.verdict, 'ok': t.ok}
                for t in st.trials.values()
            ],
            'events': st.events[-50:],
            'open_tickets': [t.as_dict() for t in self.budgets.tickets if t.status == 'open'],
            'budgets_left': self.budgets.left(),
            'preferences': self.preferences(),
            'finished': self.finished,
            'this_session': self.resumed,
        }

    def tickets(self) -> list[dict]:
        self.journal.refresh()
        return [t.as_dict() for t in self.budgets.tickets]

    def budgets_left(self) -> dict:
        self.journal.refresh()
        return {
            'left': self.budgets.left(),
            'limits': self.budgets.limits,
            'steps_left': self.steps_left(),
        }

    # Inside --------------------------------------------------------------------------------

    def _refuse_if_done(self) -> None:
        if self.finished:
            raise OperatorError('the run is finished: start a new one (harness mcp --new)')
        if self.estopped:
            raise OperatorError('the emergency stop is engaged: release it (estop engage=false)')

    def _check_key(self, key, undo: bool = False) -> None:
        """OperatorError unless `key` can name a step: an undo's own key (`undo` only) is
        'undo:' and the key of the step it takes back, so it may be longer; such keys are the
        undo's own, but a journal's trial under one (made before they were) is still its."""
        if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY + len(UNDO) * undo:
            raise OperatorError(f'key must be a non-empty string (at most {MAX_KEY} characters)')
        if not key.isprintable():  # (it is shown in messages, logs and the journal)
            raise OperatorError(
                f'key must be printable text (no control or format characters), not {shown(key)}'
            )
        if key.startswith(UNDO) != undo and key not in self.journal.state.trials:
            raise OperatorError(f"keys that begin with {UNDO!r} are the undo's own")

    def steps_left(self) -> int:
        """Control ticks left before the task's step limit ends every motion."""
        return max(0, self.task.step_limit - self.station.robot().step)

    def _refuse_if_spent(self) -> None:
        if self.steps_left() == 0:
            raise OperatorError(
                f"the task's step limit ({self.task.step_limit} control ticks) is spent: "
                'nothing can move any more; finish (or start a new run: harness mcp --new)'
            )

    def _do(self, action_json, executor: str, key: str, undo: bool = False) -> TrialRecord:
        """Run one action as a trial under `key` (an undo's own key, `undo:KEY`, only with
        `undo`)."""
        self.journal.refresh()
        self._check_key(key, undo)
        action, executor = self._checked(action_json, executor)
        known = self.journal.state.trials.get(key)
        if known is not None:
            if not same_action(known.action, action):
                raise OperatorError(
                    f'the key {shown(key)} was used for another action ({_described(known)}): '
                    'a key names one step'
                )
            return known  # the same key: the same trial, nothing moves
        self._refuse_if_done()
        self._refuse_if_spent()
        self.charges.for_action(action, executor)
        before = self.sight.fresh() if self._needs_before(action) else None
        robot = self.station.robot()
        start_step, start_state = robot.step, [round(float(v), 6) for v in robot.measured]
        trial_id = f'trial-{len(self.journal.state.dispatched) + 1:03d}'  # ids never reused
        # Journaled before it moves: a resume knows a step ran even if nothing after it did.
        self.journal.write({'type': 'dispatch', 'key': key, 'trial_id': trial_id})
        cell = self._execute(action, executor)
        status, detail = executor_status(cell)
        arm = _moved_arm(e.arm for e in cell.executions)
        try:
            claims = self._claims(action, arm)
            verdict = verify(claims, self.sight.at_rest(before))
        except Exception as exc:  # the motion ran: its record must exist whatever failed here
            self.log(f'the verifier failed on {trial_id}: {type(exc).__name__}: {exc}')
            verdict = Verdict(AMBIGUOUS, 0, [f'the verifier failed: {type(exc).__name__}: {exc}'])
        self._track(action, arm, verdict.verdict)
        self._trials_this_session += 1
        moved = self.station.robot().step != start_step
        if not moved:  # no tick ran: there is nothing to undo (nor a dataset episode)
            inverse, no_inverse = None, 'nothing moved (no control tick ran)'
        else:
            inverse, no_inverse = inverse_of(action, arm, verdict.verdict, before, robot)
        record = TrialRecord(
            trial_id=trial_id,
            key=key,
            action=action.as_json(),
            executor=executor,
            executor_status=status,
            executor_detail=detail,
            verdict=verdict.verdict,
            verifier_evidence=verdict.evidence,
            tier=verdict.tier,
            budgets_left=self.budgets.left(),
            start_step=start_step,
            end_step=self.station.robot().step,
            task=action.spoken(self.instruction),
            executions=[
                {'skill': e.skill, 'arm': e.arm, 'event': e.event, 'detail': e.detail}
                for e in cell.executions
            ],
            output=cell.output[-2000:],
            inverse=inverse,
            no_inverse=no_inverse,
        )
        self._before[key] = before
        ticks = ticks_of(cell.executions)
        event = (
            {'type': 'trial', 'dispatcher': 'mcp'}
            | record.as_dict()
            | {'instruction': self.instruction, 'dataset_task': record.task}
            | {'ticks': save_ticks(self.run, trial_id, ticks, self.log)}
            | {'start_state': start_state}
        )
        self.journal.write({'type': 'trial', 'record': record.as_dict()})
        if moved:
            self._add_to_dataset(event, ticks)
        self.run.summary(self.summary())
        self.run.event(event)
        return record

    def _checked(self, action_json, executor: str) -> tuple[Action, str]:
        """The parsed action and the executor that runs it; OperatorError says what is wrong."""
        if executor not in self.executors():
            raise OperatorError(
                f'executor must be one of {", ".join(self.executors())}, not {shown(executor)}'
            )
        try:
            action = parse_action(action_json)
        except ActionError as exc:
            raise OperatorError(str(exc)) from None
        if action.skill == 'policy':
            if action.args['policy'] not in self.policies:
                known = ', '.join(self.policies) or 'none (harness mcp --policies)'
                raise OperatorError(f'no policy {shown(action.args["policy"])}; policies: {known}')
            executor = f'policy:{action.args["policy"]}'
        if executor == 'auto':
            executor = preferred_executor(self.preferences(), action.skill)
        return self._by_position(action), executor

    def _by_position(self, action: Action) -> Action:
        """An object named by an id from observe (the verifier's own ids, not the program's)
        becomes its label and measured position: the cell takes the object of that label
        nearest to it."""
        if self.sight.last_observed is None or action.skill in ('program', 'policy'):
            return action
        ids = {o.id: o for o in self.sight.last_observed.objects}
        args = dict(action.args)
        for name, value in action.args.items():
            if name in OBJECT_ARGS and isinstance(value, str) and value in ids:
                o = ids[value]
                args[name] = {'label': o.label, 'near': np.round(o.position, 4).tolist()}
        return Action(action.skill, args, action.code)

    @staticmethod
    def _needs_before(action: Action) -> bool:
        return action.skill in ('push', 'press', 'pick')  # a pick: where to put it back

    def _add_to_dataset(self, event: dict, ticks: dict[str, np.ndarray]) -> None:
        """The trial (its `trial` event and ticks) as the next episode of <run>/lerobot (and
        lerobot/demos when a tier-1 or tier-2 verifier satisfied it), written before its result
        returns: a session killed later loses none of it. A dataset that fails says so and
        costs nothing else."""
        if not len(ticks['time']):
            return
        try:
            start, end = observed_span(event, ticks)
            frames = decoded(self.station.camera_frames(start, end))
            s = self.spec
            episode = {'task': s.task, 'layout': s.layout, 'seed': s.seed}
            if self.dataset is None:
                self.dataset = DatasetWriter(self.run.path / 'lerobot', demos=True)
            self.dataset.add(trial_of(event, ticks, frames, episode, self.run.path.name))
        except Exception as exc:
            self.log(
                f'trial {event["trial_id"]} is not in the dataset: {type(exc).__name__}: {exc}'
            )

    def _claims(self, action: Action, arm: str = '') -> tuple:
        """What the verifier checks of `action`, run by `arm` (the arm its executions moved):
        a skill's intended effect; for a program or a policy run, the task's goal."""
        if action.skill in ('program', 'policy'):
            return self.task.goal
        args = {
            k: query_of(v) if k in OBJECT_ARGS and isinstance(v, str | dict) else v
            for k, v in action.args.items()
        }  # an object by its query; a point (press's target) stays a point
        return effect_claims(action.skill, {**args, 'arm': arm}, self.held)

    def _execute(self, action: Action, executor: str) -> CellResult:
        """Run `action` with `executor`: its own cell, or the policy sent the action in words."""
        if executor.startswith('policy:') and action.skill != 'policy':
            spoken = action.spoken(self.instruction)
            return self._run_code(policy_source(executor.split(':', 1)[1], spoken))
        return self._run_code(cell_source(action))

    def _run_code(self, code: str) -> CellResult:
        cell = self.station.run_cell(code, self.spec.action_timeout_s + 60.0)
        self.sight.after(cell)
        return cell

    def _track(self, action: Action, arm: str, verdict: str) -> None:
        """Which arm holds what, as far as the verdicts show (for the next place's claims)."""
        if not arm:
            return
        what = query_of(action.args.get('obj'))
        if action.skill == 'pick' and verdict == 'satisfied':
            self.held[arm] = what
        elif action.skill in ('place', 'release') and verdict == 'satisfied':
            self.held.pop(arm, None)
        elif action.skill == 'transfer' and verdict == 'satisfied' and self.held:
            giver = next(iter(self.held))
            self.held[action.args.get('to_arm') or _other(giver)] = self.held.pop(giver)

    def _observation(self, e: Evidence) -> dict:
        return {
            'instruction': self.instruction,
            **evidence_json(e),
            'budgets_left': self.budgets.left(),
            'steps_left': self.steps_left(),
            'open_tickets': [t.id for t in self.budgets.tickets if t.status == 'open'],
        }


def _ended_by(record: TrialRecord, words: tuple[str, ...]) -> bool:
    """An execution of the trial ended with a detail that begins with one of `words`: with
    STOPPED_FROM_OUTSIDE, a stop from outside the program ended it (a client that left, an
    emergency stop, a timeout) and its motion is not all its program would have made; with
    CUT_FROM_OUTSIDE, that stop came during an execution, not between two."""
    return any(str(e.get('detail', '')).startswith(words) for e in record.executions)


def _described(record: TrialRecord) -> str:
    """The action of a journaled trial in one short line."""
    try:
        return parse_action(record.action).describe()
    except ActionError:  # (a journal from an earlier version's actions)
        return shown(record.action)


def _moved_arm(arms) -> str:
    """The first of `arms` (the executions' arms, in order) that is an arm ('' if none)."""
    return next((a for a in arms if a in ('left', 'right')), '')


def _other(arm: str) -> str:
    return 'right' if arm == 'left' else 'left'


__all__ = ['BudgetRefusedError', 'OperatorError', 'OperatorSession', 'SessionSpec']
