"""The model loop of one episode: decision points, budgets, history, verifier, wrap-up,
outcome and the run folder. Pure: the graph comes in as an `EpisodeStation`."""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Callable

from harness_bench.layout import SAMPLED as SAMPLED_LAYOUT
from harness_bench.randomization import axes_name
from harness_bench.task import Outcome
from harness_bench.verifier import Judgement
from harness_perception.images import outlined, png
from harness_policy.stream import failed_service
from harness_recording.run_folder import RunFolder, cell_record, policy_run_records
from harness_recording.trials import save_ticks, ticks_of
from harness_types.cell import CellResult
from harness_types.config import DriverConfig
from harness_types.process import interrupts_held
from harness_types.reply import FormatError, format_error_message, parse_reply
from harness_types.scene import ClaimAnswer, LocatedObject

from harness_driver.budgets import Budgets, usage_fields
from harness_driver.episode_types import (
    EpisodeResult,
    EpisodeSpec,
    EpisodeStation,
    Phases,
    Prompts,
)
from harness_driver.handover import HandOver
from harness_driver.history import History, TurnImage
from harness_driver.interface import BLOCK, cell_of, format_help
from harness_driver.models import (
    REFUSAL,
    SCRIPTED,
    Decision,
    ModelClient,
    ModelError,
    ModelReply,
    ModelRequest,
)
from harness_driver.report import TcpOf, start_text, turn_text, verdict_text
from harness_driver.requests import (
    MAX_CHARS_PER_TOKEN,
    estimate_tokens,
    recorded_reply,
    reply_problem,
    request_size,
)
from harness_driver.verifier_model import ask_verifier

POLICY_TICK_WAIT_S = (
    0.5  # the longest wall time policy-to-end is allowed per tick of the step limit
)
# How long past its cell timeout a cell is waited for: the kernel stops one at its timeout, so
# this is a margin.
CELL_WAIT_MARGIN_S = 60.0


def longest_past_budget_s(
    config: DriverConfig, cell_timeout_seconds: float, policies: bool, step_limit: int
) -> float:
    """The longest an episode's loop may run past its max_wall_seconds while it keeps every
    bound of its own (the budget is checked before each model call): the call under way
    (model_timeout_seconds), the cell of its reply and the wrap-up (each waited for its cell
    timeout and CELL_WAIT_MARGIN_S), the goal's verdict at the end (verifier_timeout_seconds),
    and with `policies` the policy run to the task's `step_limit` (policy-to-end)."""
    cell_wait = cell_timeout_seconds + CELL_WAIT_MARGIN_S
    tail = config.model_timeout_seconds + 2 * cell_wait + config.verifier_timeout_seconds
    if policies:
        tail += cell_wait + step_limit * POLICY_TICK_WAIT_S
    return tail


NEXT_REASON = {'ok': 'program_end', 'escalated': 'escalation', 'error': 'error'}
# Statuses that say why the episode ended without its outcome mattering: one that cannot be read
# then leaves them; any other ending without an outcome is an error (the bench runs it again).
UNJUDGED_STATUSES = ('error', 'interrupted', 'model_service_failed', 'policy_service_failed')
AGENT = {
    'programs': 'model writes programs',
    'skills': 'model calls one API function per reply',
    'actions': 'model commands one motion per reply',
}


# characters of a reply longer than max_tokens allows kept in the history the model is sent
SHOWN_OF_OVERLONG_REPLY = 4000


class Episode:
    """Run with `Episode(...).run(spec)`; the run folder is complete whatever happens."""

    def __init__(
        self,
        config: DriverConfig,
        station: EpisodeStation,
        model: ModelClient,
        verifier: ModelClient | None,
        budgets: Budgets,
        prompts: Prompts,
        folder: RunFolder,
        log: Callable[[str], None] = print,
        cell_timeout_seconds: float = 120.0,
        policies: bool = False,
        api_names: list[str] | None = None,
    ) -> None:
        self.config = config
        self.policy_service_failed = ''  # a policy run's server failed: the episode is not run
        self.start_state: list[float] = []  # measured before the first tick
        # The rung of the interface ladder (harness_driver.interface) and the API names a
        # one-call reply may call.
        self.interface = config.interface
        self.api_names = list(api_names or [])
        self.policies = policies  # the learned half is enabled (a policy catalogue)
        self.handover = HandOver(config.post_policy_calls)
        self.cell_timeout = cell_timeout_seconds
        self.cell_wait = cell_timeout_seconds + CELL_WAIT_MARGIN_S  # how long a cell is waited for
        self.cell_deadline: float | None = None  # by when its verify() is answered (monotonic)
        self.station = station
        self.model = model
        self.verifier = verifier
        self.budgets = budgets
        self.prompts = prompts
        self.folder = folder
        self.log = log
        self.history = History(
            config.keep_images, config.max_history_turns, config.max_request_images
        )
        self.decisions: Counter[str] = Counter()
        self.request_characters = 0  # of every model request's text (tokens need a model)
        self.unanswered = 0  # model requests made (a decision counted) that got no answer
        self.verifier_unanswered = 0  # verifier requests made that got no answer
        self.phases = Phases()
        self.objects: list[LocatedObject] = []
        self.events_handled = 0
        self.events_escalated = 0
        self.extra: dict = {}  # more summary fields from whoever runs the episode
        self.deadline: float | None = None  # when the wall budget ends (time.monotonic)
        self.stop_detail = ''  # why a budget ended the episode
        self.instruction = ''
        # The tiered verifier on the task's goal (set by whoever runs the episode): returns its
        # verdict as a dict; judged after the reset and at the end, beside the ground truth.
        self.goal_verifier: Callable[..., dict] | None = None
        self.goal_verdicts: dict[str, dict] = {}
        self.ticks: list[str] = []  # the run's saved ticks, in order (harness_recording.trials)

    # The loop ----------------------------------------------------------------------------

    def run(self, spec: EpisodeSpec) -> EpisodeResult:
        self.spec = spec
        self.started = self.loop_started = time.monotonic()
        status, detail, finish_summary, setup_error = 'error', '', '', False
        outcome: Outcome | None = None
        try:
            status, finish_summary = self._loop(spec)
            detail = self.stop_detail
            if self.policy_service_failed:
                status, detail = 'policy_service_failed', self.policy_service_failed
        except ModelError as exc:
            detail, setup_error = str(exc), exc.setup
            if exc.service:
                status = 'model_service_failed'
            self.log(f'model error: {exc}')
        except KeyboardInterrupt:
            status, detail = 'interrupted', 'interrupted by the user'
            self.log('interrupted')
        except Exception as exc:  # whatever broke, the run folder is still completed
            detail = f'{type(exc).__name__}: {exc}'
            self.log(f'error: {detail}')
        # The run folder is written whole: a Ctrl-C while it is (the first, when it comes
        # as the episode ends; a terminal's reaches this process too) is raised after it.
        with interrupts_held():
            since = time.monotonic()
            try:
                self.station.stop_kernel()
            except Exception as exc:  # (the outcome is still read: it releases the token)
                detail = detail or f'could not stop the kernel: {exc}'
            try:
                outcome = self.station.outcome(end=True)
                self.phases.add('outcome', since)
            except Exception as exc:  # the summary must still be written
                detail = detail or f'could not read the outcome: {exc}'
                if status not in UNJUDGED_STATUSES:  # (a station gone under the episode)
                    status, detail = 'error', f'could not read the outcome: {exc}'
            since = time.monotonic()
            self._judge_goal('end', outcome)
            step = self.phases.part('closing', 'goal_judged', since)
            self._trial_event(status)
            self.folder.event({'type': 'end', 'status': status, 'detail': detail})
            step = self.phases.part('closing', 'trial_and_end_events', step)
            try:  # the end event closes the recording; the summary says whether it is complete
                self.extra.update(self.station.stop_recording())
            except Exception as exc:
                self.extra['bag_error'] = f'the recording could not be closed: {exc}'
            self.phases.part('closing', 'recording_closed', step)
            self.phases.add('closing', since)
            summary = self._summary(spec, status, detail, finish_summary, outcome)
            if setup_error:  # (every episode with this set-up would meet it: a bench stops)
                summary['setup_error'] = True
            self.folder.summary(summary)
            self.folder.close()
        return EpisodeResult(summary, setup_error)

    def _loop(self, spec: EpisodeSpec) -> tuple[str, str]:
        since = time.monotonic()
        self.station.serve_verify(lambda claim: self.verify(claim, 'program'))
        self.station.start_kernel(self.folder.workspace, self.folder.kernel_log)
        step = self.phases.part('start_up', 'kernel', since)
        start = self.station.reset(spec.task, spec.layout, spec.seed, spec.randomize)
        step = self.phases.part('start_up', 'reset', step)
        self.instruction = start.instruction
        self.log(f'instruction: {start.instruction}')
        robot = self.station.robot()
        self.start_state = [round(float(v), 6) for v in robot.measured]  # the trial's frame 0
        pictures = self.station.cameras(list(start.pictures)) if start.pictures else []
        images = [TurnImage('the task picture', png(view.rgb)) for view in pictures]
        images += self._camera_images(list(self.config.cameras))
        self.history.start(
            start_text(
                start.instruction,
                start.description,
                robot,
                spec.step_limit,
                self.config.max_model_calls,
            ),
            images,
        )
        step = self.phases.part('start_up', 'first_request', step)
        self._judge_goal('start', self._outcome_quietly())
        self.phases.part('start_up', 'goal_judged', step)
        self.phases.add('start_up', since)
        # The wall-time budget counts from the first decision: start-up is the harness's.
        self.loop_started = time.monotonic()
        self.deadline = self.loop_started + self.config.max_wall_seconds
        decision = Decision('start', 1)
        while True:
            messages, images = self.history.messages()
            worst = self.budgets.worst_case_cost(
                self.model.name,
                estimate_tokens(self.prompts.system, messages),
                self.config.max_tokens,
            )
            stop = self.budgets.stop_reason(time.monotonic() - self.loop_started, worst)
            # The post-policy calls are used up, or the call budget ended while they ran: the
            # policy runs to the end (it costs no model call).
            if self.handover.policy_to_end_due or (
                stop == 'budget_exhausted' and self.handover.calls_left is not None
            ):
                return self._policy_to_end()
            if stop is not None:
                why = f'{stop.replace("_", " ")} before call {decision.call}'
                if stop == 'cost_exhausted':
                    why += (
                        f': ${self.budgets.usage.cost_usd:.4f} spent, and the call could cost up '
                        f'to ${worst:.4f} more, past the cap of ${self.config.max_cost_usd:g}'
                    )
                self.log(why)
                self.stop_detail = why
                return stop, ''
            reply = self._ask(decision, messages, images)
            text = reply.text
            if reply.stop_reason == REFUSAL:
                # Asked again with the same context, a model that refused refuses again: every
                # call left would be spent on it.
                said = f': {" ".join(text.split())[:300]}' if text.strip() else ''
                self.stop_detail = f'the model refused to go on (stop_reason {REFUSAL}){said}'
                self.log(self.stop_detail)
                return 'model_refused', ''
            try:
                problem = reply_problem(reply, self.config.max_tokens)
                if problem:
                    raise FormatError(problem)
                parsed = parse_reply(text, (BLOCK[self.interface], 'verify', 'finish'))
                code = (
                    cell_of(self.interface, parsed, self.api_names)
                    if parsed.kind not in ('verify', 'finish')
                    else ''
                )
            except FormatError as exc:
                # resent with each request: a reply past what max_tokens allows, its start only
                most = self.config.max_tokens * MAX_CHARS_PER_TOKEN
                kept = SHOWN_OF_OVERLONG_REPLY
                shown = text if len(text) <= most else f'{text[:kept]}\n[{len(text) - kept} more]'
                self.history.bad_reply(
                    shown or '(an empty reply)',
                    self._noted(format_error_message(exc, format_help(self.interface))),
                )
                self.log(f'format error: {exc}')
                decision = Decision('format', decision.call + 1)
                continue
            reply = parsed
            self.history.reply(text)
            if reply.kind == 'finish':
                self.log(f'finish: {reply.body}')
                self._wrap_up()
                return 'finished', reply.body
            if reply.kind == 'verify':
                verdict = self.verify(reply.body, 'reply')
                self.history.answer(
                    self._noted(verdict_text(reply.body, verdict, self.budgets.calls_left))
                )
                decision = Decision('verify', decision.call + 1)
                continue
            cell = self._run_cell(code, decision.call)
            self.handover.after_cell(cell)
            if cell.status == 'finished':
                self._wrap_up()
                return 'finished', cell.summary
            if cell.status == 'episode_ended':
                return 'episode_ended', ''
            reason = NEXT_REASON.get(cell.status, 'error')
            if reason == 'program_end' and self.interface != 'programs':
                reason = 'action'  # one call or one motion ran: the next one is asked for
            since = time.monotonic()
            robot = self.station.robot()
            images = [
                TurnImage(i.caption or 'shown by the program', png(i.rgb)) for i in cell.images
            ]
            images += self._camera_images(list(self.config.cameras))
            text = turn_text(
                cell,
                robot,
                self.spec.step_limit,
                self.budgets.calls_left,
                list(self.config.cameras),
                self._tcp_of if cell.stopped_by is not None else None,
            )
            self.history.answer(self._noted(text), images)
            self.phases.add('turn_report', since)
            event = cell.stopped_by.event if cell.stopped_by else ''
            decision = Decision(reason, decision.call + 1, cell.status, event)

    # Steps -------------------------------------------------------------------------------

    def _ask(self, decision: Decision, messages: list[dict], images: list) -> ModelReply:
        chars, n_images, png_bytes = request_size(self.prompts.system, messages)
        self.decisions[decision.reason] += 1
        self.request_characters += chars
        self.log(
            f'model call {decision.call}/{self.config.max_model_calls} ({decision.reason}): '
            f'{chars} characters, {n_images} images'
        )
        since = time.monotonic()
        request = ModelRequest(
            self.prompts.system, messages, self.config.max_tokens, decision, self.deadline
        )
        self.handover.used_call()
        asked = {
            'type': 'model_request',
            'call': decision.call,
            'reason': decision.reason,
            'characters': chars,
            'images': n_images,
        }
        # Said before it is sent: if this process dies while the request is out, its
        # supervisor still counts the request (asked, never answered).
        self.folder.event({**asked, 'type': 'model_request_sent'})
        try:
            reply = self.model.complete(request)
        except BaseException as exc:  # interrupted, or the service failed: asked, not answered
            self.unanswered += 1
            self.folder.event(
                {
                    **asked,
                    'answered': False,
                    'why': 'interrupted' if isinstance(exc, KeyboardInterrupt) else str(exc),
                    'wall_s': round(time.monotonic() - since, 3),
                }
            )
            raise
        finally:
            self.phases.add('model', since)
        cost = self.budgets.add(self.model.name, reply.input_tokens, reply.output_tokens, False)
        files = [self.folder.image(f'call{decision.call:02d}', i.png) for i in images]
        self.folder.event(
            {
                **asked,
                'image_bytes': png_bytes,
                'image_files': files,
                'messages': len(messages),
                'input_tokens': reply.input_tokens,
                'output_tokens': reply.output_tokens,
                'stop_reason': reply.stop_reason,
                'cost_usd': cost,
                'wall_s': round(time.monotonic() - since, 3),
                'reply': recorded_reply(reply.text, request.max_tokens),
            }
        )
        return reply

    def _run_cell(self, code: str, call: int) -> CellResult:
        since = time.monotonic()
        self.log(f'running the program of call {call} ({len(code.splitlines())} lines)')
        # A program's verify() must be answered before the kernel stops the cell.
        self.cell_deadline = since + self.cell_timeout - max(2.0, 0.1 * self.cell_timeout)
        try:
            # The skills rung's one call per reply, counted as it runs: a statement's text
            # cannot tell (exec('...'), a comprehension, globals()['pick']).
            max_calls = 1 if self.interface == 'skills' else 0
            cell = self.station.run_cell(code, self.cell_wait, max_calls)
        except BaseException as exc:
            # The program the model wrote is kept; what it moved is in the bag (the executions'
            # starts and ends, every state): the kernel's result of the cell never comes.
            cut = isinstance(exc, KeyboardInterrupt)
            record = {
                'type': 'cell_interrupted' if cut else 'cell_lost',
                'call': call,
                'code': code,
                'wall_s': round(time.monotonic() - since, 3),
            }
            if not cut:
                record['why'] = f'{type(exc).__name__}: {exc}'[:2000]
            self.folder.event(record)
            raise
        finally:
            self.cell_deadline = None
            self.phases.add('cells', since)
        self.events_handled += cell.events_handled
        if cell.status == 'escalated':
            self.events_escalated += 1
        if cell.scene.measured:
            self.objects = cell.scene.objects
        self.folder.event(cell_record(cell, call, code))
        self._save_ticks(f'cell-{call:03d}', cell)
        self._policy_events(cell, call)
        e = cell.stopped_by
        stopped = f', stopped by {e.event}: {e.detail}' if e else ''
        self.log(f'cell {cell.status}: {len(cell.executions)} executions{stopped}')
        return cell

    def _camera_images(self, cameras: list[str]) -> list[TurnImage]:
        """Fresh views of `cameras` with the located objects outlined."""
        if not cameras:
            return []
        return [
            TurnImage(f'{view.name} now', png(outlined(view, self.objects)))
            for view in self.station.cameras(cameras)
        ]

    def verify(self, claim: str, source: str) -> ClaimAnswer:
        """Ask the verifier about `claim` with fresh camera views (from a <verify> reply or a
        program's verify())."""
        since = time.monotonic()
        verdict, tokens = self._verdict(claim, source)
        self.phases.add('verify', since)
        self.verifier_unanswered += bool(tokens.get('asked'))
        self.folder.event(
            {
                'type': 'verify',
                'source': source,
                'claim': claim,
                'answered': verdict.answered,
                'yes': verdict.yes,
                'sentence': verdict.sentence,
                **tokens,
            }
        )
        answer = ('YES' if verdict.yes else 'NO') if verdict.answered else 'not answered:'
        self.log(f'verify ({source}) "{claim}": {answer} {verdict.sentence}')
        return verdict

    def _verdict(self, claim: str, source: str) -> tuple[ClaimAnswer, dict]:
        if not self.config.verifier_enabled:
            why = 'no verifier in this run (driver.verifier_enabled: false)'
            return ClaimAnswer(False, False, why), {}
        if self.verifier is None or self.verifier.name == SCRIPTED:
            return ClaimAnswer(False, False, 'the scripted baseline has no verifier'), {}
        images = self._camera_images(list(self.config.cameras) or ['cam_head'])
        now = time.monotonic()
        # A program's verify() is answered within its cell's time, whatever the service does:
        # the program waits for the answer, and the kernel stops the cell at that time. Every
        # verdict has its own bound too (verifier_timeout_seconds), whichever comes first.
        bounds = [
            (
                now + self.config.verifier_timeout_seconds,
                "the verifier's bound (driver.verifier_timeout_seconds)",
                True,
            ),
            (self.deadline, "the episode's wall budget", False),
            (self.cell_deadline if source == 'program' else None, "the program cell's time", True),
        ]
        return ask_verifier(
            claim,
            self.verifier,
            self.prompts.verifier,
            images,
            self.budgets,
            now - self.loop_started,
            bounds,
        )

    @functools.cached_property
    def _tcp_of(self) -> TcpOf | None:
        """The TCP placer of the event traces (the station's URDF, read once; None where it
        cannot be made: the report then gives the joints alone)."""
        try:
            from arx_x5_description.urdf import station_urdf

            return TcpOf(station_urdf())
        except Exception as exc:  # a trace without TCPs, not a lost turn
            self.log(f'the event traces give no TCP: {type(exc).__name__}: {exc}')
            return None

    def _noted(self, text: str) -> str:
        """A turn's text with the post-policy countdown, once it runs."""
        note = self.handover.note()
        return f'{text}\n{note}' if note else text

    def _policy_to_end(self) -> tuple[str, str]:
        """The post-policy calls are used up: the policy runs to the episode's end; if the
        episode still runs after it, the driver finishes (source: driver) and wraps up."""
        since = time.monotonic()
        self.log('post-policy calls used up: the policy runs to the end of the episode')
        # The policy may run until the step limit: wait as long as that may take (a tick of
        # simulated time costs well under POLICY_TICK_WAIT_S of wall time, cameras included).
        wait = self.cell_wait + self.spec.step_limit * POLICY_TICK_WAIT_S
        try:
            cell = self.station.policy_to_end(wait)
        finally:
            self.phases.add('policy_to_end', since)
        if cell.status == 'error':
            self.log(f'policy-to-end: {cell.traceback}')
        self.handover.after_cell(cell)
        self.folder.event({**cell_record(cell, 0, ''), 'type': 'policy_to_end'})
        self._save_ticks('policy-to-end', cell)
        self._policy_events(cell, 0)
        if cell.status == 'episode_ended':
            return 'episode_ended', ''
        ran = (
            f'the policy ran until {cell.stopped_by.event}'
            if cell.stopped_by
            else f'the policy ran until {cell.executions[-1].event}'
            if cell.executions
            else f'the policy could not run ({cell.traceback})'
        )
        summary = f'the driver finished the episode: the post-policy calls were used up and {ran}'
        self.folder.event({'type': 'finish', 'source': 'driver', 'summary': summary})
        self.log(f'finish (driver): {summary}')
        self._wrap_up()
        return 'finished', summary

    def _policy_events(self, cell: CellResult, call: int) -> None:
        """One events.jsonl line per policy run of a cell; a policy server that failed makes
        the episode not run (not the task's failure)."""
        self.policy_service_failed = failed_service(cell.executions) or self.policy_service_failed
        for record in policy_run_records(cell, call):
            self.folder.event(record)

    def _wrap_up(self) -> None:
        since = time.monotonic()
        self.log('wrap-up: opening idle grippers, arms home (without the program)')
        try:
            cell = self.station.wrap_up(self.cell_wait)
        finally:
            self.phases.add('wrap_up', since)
        record = cell_record(cell, 0, '')
        self.folder.event({**record, 'type': 'wrap_up'})
        self._save_ticks('wrap-up', cell)
        if cell.status != 'ok':
            detail = cell.stopped_by.detail if cell.stopped_by else cell.traceback
            self.log(f'wrap-up {cell.status}: {detail}')

    # The trial and its verdicts ------------------------------------------------------------

    def _save_ticks(self, name: str, cell: CellResult) -> None:
        saved = save_ticks(self.folder, name, ticks_of(cell.executions), self.log)
        if saved:
            self.ticks.append(saved)

    def _outcome_quietly(self) -> Outcome | None:
        try:
            return self.station.outcome()
        except Exception:
            return None

    def _judge_goal(self, phase: str, outcome: Outcome | None) -> None:
        """The tiered verifier's verdict on the task's goal now, beside the ground truth (tier
        4): one `goal_verdict` event; the summary keeps both phases (bench's report card)."""
        if self.goal_verifier is None:
            return
        try:
            extra = ()
            if phase == 'end' and self.config.goal_verifier_vlm and self.instruction:
                said = self.verify(f'The task is done: {self.instruction}', 'goal')
                if said.answered:
                    answer = 'satisfied' if said.yes else 'violated'
                    extra = (Judgement(3, answer, said.sentence),)
            verdict = self.goal_verifier(extra)
        except Exception as exc:  # a verifier that fails costs its verdict, not the episode
            verdict = {'verdict': 'ambiguous', 'tier': 0, 'evidence': [f'failed: {exc}']}
        verdict['ground_truth'] = None if outcome is None else bool(outcome.success)
        self.goal_verdicts[phase] = verdict
        self.folder.event({'type': 'goal_verdict', 'phase': phase, **verdict})

    def _trial_event(self, status: str) -> None:
        """The episode as one trial of the dataset (harness export --lerobot)."""
        end = self.goal_verdicts.get('end', {})
        event = {
            'type': 'trial',
            'dispatcher': 'scripted' if self.model.name == SCRIPTED else 'model',
            'trial_id': 'episode',
            'executor': self.model.name,
            'executor_status': status,
            'verdict': end.get('verdict', ''),
            'tier': end.get('tier', 0),
            'verifier_evidence': end.get('evidence', []),
            'task': self.spec.task,
            'instruction': self.instruction,
            'dataset_task': self.instruction,
            'ticks': list(self.ticks),
            'start_state': self.start_state,
        }
        if self.config.outcome_model:
            event['outcome_model'] = self._outcome_scores(event)
        self.folder.event(event)

    def _outcome_scores(self, event: dict) -> dict:
        """The outcome model's scores of the trial, in shadow mode: whatever it says or fails
        to say changes nothing of the episode."""
        from harness_driver.outcome_model import load_model, score_trial

        try:
            s = self.spec
            layout = f'{s.task}:{s.seed}' if s.layout == SAMPLED_LAYOUT else ''
            model = load_model(self.config.outcome_model)
            return score_trial(model, self.folder.path, event, layout)
        except Exception as exc:
            return {'error': f'the outcome model could not score it: {type(exc).__name__}: {exc}'}

    # The summary -------------------------------------------------------------------------

    def _summary(
        self,
        spec: EpisodeSpec,
        status: str,
        detail: str,
        finish_summary: str,
        outcome: Outcome | None,
    ) -> dict:
        try:
            steps = self.station.robot().step
        except Exception:
            steps = None
        baseline = self.model.name == SCRIPTED
        return {
            'task': spec.task,
            'layout': spec.layout,
            'seed': spec.seed,
            'randomize': axes_name(spec.randomize),
            'model': self.model.name,
            'verifier_model': self.verifier.name if self.verifier else None,
            'agent': "scripted baseline: the task's reference program, no model"
            if baseline
            else AGENT[self.interface],
            'interface': self.interface,
            'strategy': {
                'policies': self.policies,
                'forced': self.config.strategy or None,
                **self.handover.summary(),
            },
            'baseline': baseline,
            'status': status,
            'detail': detail,
            'finish_summary': finish_summary,
            **usage_fields(
                self.budgets.usage,
                self.unanswered,
                self.decisions,
                self.request_characters,
                self.verifier_unanswered,
            ),
            'events_handled': self.events_handled,
            'events_escalated': self.events_escalated,
            'env_steps': steps,
            'step_limit': spec.step_limit,
            'outcome': None
            if outcome is None
            else {'success': outcome.success, 'score': outcome.score, 'detail': outcome.detail},
            'wall_seconds': round(time.monotonic() - self.started, 2),
            'phases_seconds': {k: round(v, 3) for k, v in self.phases.seconds.items()},
            'phase_parts_seconds': {
                phase: {k: round(v, 3) for k, v in steps.items()}
                for phase, steps in self.phases.parts.items()
            },
            'goal_verdicts': self.goal_verdicts,
            **self.extra,
        }
