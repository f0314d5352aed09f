"""`harness mcp`'s tools: an MCP server (the `mcp` SDK's MCPServer) over one OperatorSession.
The session (and with it the station) starts at the first tool call, after the stdio transport
has taken the process's standard output for itself, and lives until the server stops, across
HTTP sessions. Each tool's docstring is what the agent reads."""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable
from typing import Annotated, Any

import anyio
import anyio.to_thread
from harness_perception.images import outlined, png
from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import WithJsonSchema

from harness_operator.actions import SKILL_ARGS, action_schema
from harness_operator.budgets import BudgetRefusedError
from harness_operator.journal import JournalError
from harness_operator.session import EXECUTORS, OperatorError, OperatorSession

INSTRUCTIONS = (
    'You operate a dual-arm ARX X5 robot station. Look with observe, act with do_action (one '
    'unit step of the task: a skill call or a short program cell) under a key of your own, and '
    'read both fields of every result: executor_status says what the motion did, verdict what '
    "the station's verifier measured of the action's intended effect; only ok (done and "
    'satisfied) means the step succeeded; after ambiguous or stale, recheck it. Retry a lost '
    'reply with the same key: it returns the '
    'same trial and moves nothing. Re-observing with nothing moved, retrying a failed action, '
    'switching executors, undoing an action and pausing for a refill spend budgets you cannot '
    "raise; an exhausted budget opens a ticket for the station's owner. Call finish when the "
    'task is done.'
)


# An action as do_action takes it: checked by parse_action (ActionError says what is wrong);
# its input schema is one alternative per kind, so a client can validate before it calls.
def _action_json(policies: bool):
    return Annotated[dict[str, Any], WithJsonSchema(action_schema(policies))]


def _batch_step(policies: bool):
    step = {
        'type': 'object',
        'properties': {
            'action': action_schema(policies),
            'key': {'type': 'string', 'minLength': 1},
            'executor': {'type': 'string'},
        },
        'required': ['action', 'key'],
        'additionalProperties': False,
    }
    return Annotated[dict[str, Any], WithJsonSchema(step)]


class SessionHolder:
    """Starts the session once, on first use, from `open_session` (which may take seconds:
    the station's graph starts); remembers a start-up failure and reports it on every call."""

    def __init__(self, open_session: Callable[[], OperatorSession]) -> None:
        self._open = open_session
        self._lock = threading.Lock()
        self.session: OperatorSession | None = None
        self.error = ''
        self._starting: OperatorSession | None = None

    def now(self) -> OperatorSession:
        """The session even while it starts (a resume replays the journal's actions): the
        emergency stop must not wait for that."""
        starting = self._starting
        return starting if starting is not None else self.get()

    def get(self) -> OperatorSession:
        with self._lock:
            if self.session is None and not self.error:
                try:
                    self._starting = self._open()
                    self._starting.start()
                    self.session = self._starting
                except (OperatorError, JournalError) as exc:
                    self.error = str(exc)
                except Exception as exc:  # the agent must learn why nothing works
                    self.error = f'the station did not start: {type(exc).__name__}: {exc}'
            if self.error:
                raise ToolError(self.error)
            return self.session


def _call(fn, *args):
    """fn(*args), its refusals and failures as tool errors that say what happened (the SDK
    hides the text of any other exception from the client)."""
    try:
        return fn(*args)
    except (BudgetRefusedError, OperatorError) as exc:
        raise ToolError(f'refused, nothing moved: {exc}') from None
    except JournalError as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:  # the station failed under the call: say so, keep serving
        logging.getLogger('harness.mcp').exception('tool call failed')
        raise ToolError(f'the station failed: {type(exc).__name__}: {exc}') from None


def _skills_text() -> str:
    lines = []
    for skill, table in SKILL_ARGS.items():
        args = ', '.join(f'{n}{"" if required else "?"}' for n, (_, required) in table.items())
        lines.append(f'  {skill}({args})')
    return '\n'.join(lines)


# Tool calls run at most this many at once, on threads of their own: the SDK runs a sync tool
# on anyio's default limiter, which its stdio transport reads with too, and 40 calls waiting on
# one motion held all of its threads: an estop sent then was not even read until the motion
# ended. The emergency stop has threads of its own.
TOOL_THREADS = 8
ESTOP_THREADS = 2


def _threaded(fn: Callable, limiter: anyio.CapacityLimiter) -> Callable:
    """`fn` as an async tool that runs it on a thread under `limiter` (a call cancelled by its
    client still runs to its end: a timed-out client cancels too, and retries by its key)."""

    @functools.wraps(fn)
    async def tool(**kwargs):
        return await anyio.to_thread.run_sync(functools.partial(fn, **kwargs), limiter=limiter)

    return tool


def build_server(holder: SessionHolder, policies: bool = False) -> MCPServer:
    """The MCP server with the operator's tools over `holder`'s session; with `policies`
    also list_policies and run_policy."""
    server = MCPServer('harness', instructions=INSTRUCTIONS)
    calls = anyio.CapacityLimiter(TOOL_THREADS)
    stops = anyio.CapacityLimiter(ESTOP_THREADS)

    def tool(estop: bool = False, **options) -> Callable:
        """server.tool(**options) for a sync function, run by _threaded."""

        def register(fn: Callable) -> Callable:
            server.tool(**options)(_threaded(fn, stops if estop else calls))
            return fn

        return register

    @tool()
    def observe() -> list:
        """Look at the station now: the robot (each arm's TCP position in m, gripper opening 0-1,
        finger force in N, joints) and every object the station's perception finds (id, label
        such as 'red cube', position and size in m, world frame: x right, y forward, z up), as
        JSON, with the head camera's view (objects outlined with their ids), and steps_left:
        the control ticks left before the task's step limit ends every motion. Looking again
        with nothing moved since the last look spends the re-observe budget."""
        session = holder.get()
        observation, views = _call(session.observe)
        evidence = session.sight.last_observed
        image = outlined(views[0], evidence.objects) if views else None
        out: list = [json.dumps(observation)]
        if image is not None:
            out.append(Image(data=png(image), format='png'))
        return out

    def do_action(action: dict, key: str, executor: str = 'auto') -> dict[str, Any]:
        session = holder.get()
        return _call(session.do_action, action, executor, key).as_dict()

    # The action's schema, one alternative per kind (a policy's only with policies), set
    # before the tool is made: it is what the client is told to send.
    do_action.__annotations__['action'] = _action_json(policies)
    tool(
        description=(
            'Dispatch one unit step of the task and wait for it. `action` is a skill call, '
            '{"skill": NAME, ARG: VALUE, ...}, with objects named by a locate query ("green '
            'block") or an id from observe; `?` marks optional arguments:\n'
            + _skills_text()
            + '\nor a short program cell {"program": "<python using the program API>"}. '
            f'`executor`: {", ".join(EXECUTORS)}'
            + (' or policy:NAME (the policy is sent the action in words)' if policies else '')
            + '. `key`: your own unique name for this step (at most 200 characters; keys '
            "that begin with 'undo:' are undo's own); "
            'the same key again returns the same trial and moves nothing (retry a lost reply '
            "with it). Every motion counts against the task's step limit (steps_left in "
            'observe and budgets); once it is spent, actions are refused. Returns {trial_id, '
            'executor_status: done|timeout|clamped|error, '
            'verdict: satisfied|violated|ambiguous|stale, verifier_evidence, tier (1 physical, '
            '2 perception; 0 when no tier could tell), budgets_left, ok}. ok only when done '
            'and satisfied; after ambiguous or stale, recheck(key) before deciding. A cancelled '
            'call runs on to its end (retry it by its key): estop stops a motion.'
        ),
    )(do_action)

    def run_batch(actions: list[dict]) -> dict[str, Any]:
        """Dispatch several steps in order, each {"action": ..., "key": ..., "executor"?}, as
        do_action would, stopping after the first that is not ok. Every step is checked before
        the first runs. Returns {"trials": [...]}, one do_action result per step that ran, and
        "refused" when a budget or the emergency stop refused a later step."""
        session = holder.get()
        trials, refused = _call(session.run_batch, actions)
        return {'trials': [t.as_dict() for t in trials]} | ({'refused': refused} if refused else {})

    run_batch.__annotations__['actions'] = list[_batch_step(policies)]
    tool()(run_batch)

    @tool()
    def recheck(key: str) -> dict[str, Any]:
        """Judge an ambiguous or stale trial (by its key) again from fresh views: the way on
        from such a verdict. Spends the re-observe budget. Returns {key, trial_id, verdict,
        tier, evidence, ok, budgets_left}; the trial's own record does not change."""
        return _call(holder.get().recheck, key)

    @tool()
    def undo() -> dict[str, Any]:
        """Take the last action back by its inverse, run as a trial of its own (key
        'undo:<its key>'): after a pick, the object is put back where it stood; after a
        move_eef (or one arm's home), the TCP goes back where it was. Other actions have no
        inverse and are refused with the reason (a place let go: picking again is a new pick; a
        press cannot be taken back). Spends the undo budget. Returns {undone, inverse, trial,
        budgets_left}."""
        return _call(holder.get().undo)

    @tool()
    def prefer(executor: str, skill: str) -> dict[str, Any]:
        """Prefer `executor` ('skill', or 'policy:NAME' with policies) for `skill` (pick, place,
        ...): do_action with executor 'auto' then runs that skill with it. A preference for a
        policy is kept with the policy's catalogue version; once the policy changes it is
        unverified (journal and preferences say so) and not followed until set again.
        executor 'auto' clears it. Returns every preference."""
        return _call(holder.get().prefer, executor, skill)

    @tool()
    def refill_pause(reason: str) -> dict[str, Any]:
        """Ask the station's owner to refill the station (objects used up or off the table),
        saying what. Spends the refill_pause budget; in simulation nothing is refilled."""
        return _call(holder.get().refill_pause, reason)

    @tool(estop=True)
    def estop(engage: bool = True) -> dict[str, Any]:
        """Emergency stop: engage=true stops any motion at its next control tick (the arms hold
        their pose) and refuses every action until estop(engage=false) releases it."""
        return _call(holder.now().estop, engage)

    @tool()
    def journal() -> dict[str, Any]:
        """The run journal: the goal, every trial so far (also from earlier sessions), recent
        events, open tickets and budgets left; `this_session`: how many trials this session
        resumed and any that came out different. A new session resumes from it."""
        return _call(holder.get().journal_view)

    @tool()
    def tickets() -> dict[str, Any]:
        """Tickets opened when a budget ran out: id, failure class, reason, status (open until
        the station's owner resolves it) and the owner's resolution."""
        return {'tickets': _call(holder.get().tickets)}

    @tool()
    def budgets() -> dict[str, Any]:
        """The budgets per failure class (reobserve, retry, executor_switch, undo,
        refill_pause): what is left and the limits, which you cannot raise; and steps_left,
        the control ticks left before the task's step limit."""
        return _call(holder.get().budgets_left)

    @tool()
    def finish() -> dict[str, Any]:
        """End the run when the task is done (or cannot be done): the station opens idle
        grippers and sends both arms home, and its verifier judges the task's goal. No action
        runs after it."""
        return _call(holder.get().finish)

    if policies:

        @tool()
        def list_policies() -> str:
            """The station's policies, one line each: what it is, the task kinds it learned
            and which of them it usually finishes, its action rate and cameras."""
            return _call(holder.get().list_policies)

        @tool()
        def run_policy(policy: str, instruction: str, key: str) -> dict[str, Any]:
            """Let a policy act on `instruction` as one bounded execution (every action
            shielded; it ends when the policy says it is done, the arms stall, or its time
            bound passes), judged against the task's goal. Returns what do_action returns;
            the same key again returns the same trial."""
            action = {'policy': policy, 'instruction': instruction}
            return _call(holder.get().do_action, action, 'auto', key).as_dict()

    return server
