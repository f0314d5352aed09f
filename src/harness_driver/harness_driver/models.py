"""Model clients: the real Anthropic Messages API client and the scripted baseline."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse

from harness_driver.report import instruction_in

SCRIPTED = 'scripted'
REFUSAL = 'refusal'  # the Messages API's stop_reason when the model declines to go on
INSTRUCTION = 'INSTRUCTION'  # the name a reference program reads the instruction from


class ModelError(RuntimeError):
    """The model could not be asked. `setup` is True when the cause is the set-up, before
    any answer (no key, an unreachable server at the start, a refused key, an unknown model):
    the command reports it in one line and exits 2. `service` is True when the service failed
    during the episode (overloaded, rate limited, unreachable or answering garbage for longer
    than the request's deadline allows: the episode's wall budget, or a program cell's time):
    the episode ends `model_service_failed`."""

    def __init__(self, message: str, setup: bool = False, service: bool = False) -> None:
        super().__init__(message)
        self.setup = setup
        self.service = service


@dataclass(frozen=True)
class Decision:
    """Why the model is asked, and what the scripted model needs to know about the last turn."""

    reason: str  # start | escalation | error | program_end | verify | format
    call: int  # 1-based
    cell_status: str = ''
    event: str = ''


@dataclass(frozen=True)
class ModelRequest:
    system: str
    messages: list[dict]
    max_tokens: int
    decision: Decision
    deadline: float | None = None  # time.monotonic() after which no attempt starts
    deadline_for: str = "the episode's wall budget"  # what sets the deadline, for its error
    # time.monotonic() at which a request in flight is given up (a program waits for the
    # answer; a verdict has its own bound); without one, a request that started runs to its
    # answer or the client's timeout. Never before `deadline`.
    cut: float | None = None
    cut_for: str = ''  # what sets the cut, for its error


@dataclass(frozen=True)
class ModelReply:
    text: str
    input_tokens: int
    output_tokens: int
    stop_reason: str = 'end_turn'
    other_blocks: tuple[str, ...] = ()  # types of the content blocks that were not text


class ModelClient(Protocol):
    name: str

    def complete(self, request: ModelRequest) -> ModelReply: ...


FIRST_WAIT_S = 1.0
LONGEST_WAIT_S = 30.0
# How much longer than its time a request is waited for before it is given up (the SDK's own
# timeout may end it first, with its own error); none past its cut.
REQUEST_GRACE_S = 1.0
# Besides 429 and 5xx, the statuses retried (as the SDK's own retries do): the request timed
# out at the server (408), or it met another one in flight (409).
RETRIED_STATUSES = (408, 409)


class MalformedAnswerError(ValueError):
    """A 200 answer that is not a Messages API message (a proxy's HTML page, missing usage)."""


class RequestTimeoutError(TimeoutError):
    """One request took longer than its time (model_timeout_seconds, or what the deadline
    left), however slowly its bytes came."""


class AnthropicModel:
    """Claude through the `anthropic` SDK. The key comes from ANTHROPIC_API_KEY and the server
    from ANTHROPIC_BASE_URL (default: Anthropic's API).

    Overloads, rate limits, server errors, timeouts, dropped connections and malformed
    answers are retried with exponential backoff (a longer `retry-after` obeyed) for as long as
    the request's deadline (the episode's wall budget, or a program cell's time) allows; each
    wait is said through `log`. One request takes at most `timeout` seconds in all (the SDK's
    timeout bounds each read, so a server that sends a byte a second would hold it forever),
    and never runs past its cut.
    """

    def __init__(
        self, name: str, timeout: float = 120.0, log: Callable[[str], None] = print
    ) -> None:
        import anthropic

        key = os.environ.get('ANTHROPIC_API_KEY', '')
        if not key:
            raise ModelError(
                f'model {name!r} needs ANTHROPIC_API_KEY in the environment '
                f'(or use --model {SCRIPTED} for the baseline without a model)',
                setup=True,
            )
        self.name = name
        self.timeout = timeout
        self.log = log
        # Also told what `log` is (each retry and why): the run folder's events, where one runs.
        self.note: Callable[[str], None] = lambda _line: None
        self.base_url = os.environ.get('ANTHROPIC_BASE_URL') or 'https://api.anthropic.com'
        self._anthropic = anthropic
        self._key = key
        self.client = self._new_client()
        # A client given up on (a request past its time) is closed once no request of any
        # thread uses it: the model and the verifier may be one client, asked from two threads.
        self._clients_lock = threading.Lock()
        self._in_use: dict[int, int] = {}  # id(client) -> requests running on it
        self._retired: set[int] = set()
        self.answered = 0
        # Whether the server was ever reached (a probe that connected, an answer): after that,
        # a refused connection is the service's failure, retried, not a set-up problem.
        self.reached = False

    def _new_client(self):
        # Our own retries (below) know the episode's wall budget; the SDK's do not.
        return self._anthropic.Anthropic(
            api_key=self._key, base_url=self.base_url, timeout=self.timeout, max_retries=0
        )

    def probe(self, timeout: float = 5.0) -> None:
        """ModelError (setup) when nothing listens at the server's address."""
        url = urlparse(self.base_url)
        port = url.port or (443 if url.scheme == 'https' else 80)
        try:
            socket.create_connection((url.hostname or '', port), timeout=timeout).close()
        except OSError as exc:
            raise ModelError(
                f'cannot reach the model server at {self.base_url}: {exc}', setup=True
            ) from None
        self.reached = True

    def complete(self, request: ModelRequest) -> ModelReply:
        a = self._anthropic
        attempt = 0
        while True:
            attempt += 1
            try:
                reply = self._reply(self._create(request, attempt))
            except a.AuthenticationError as exc:
                raise ModelError(
                    f'the model server refused the key: {_message(exc)}',
                    setup=not self.answered,
                ) from None
            except a.PermissionDeniedError as exc:
                raise ModelError(
                    f'the model server refused: {_message(exc)}', setup=not self.answered
                ) from None
            except a.NotFoundError as exc:
                raise ModelError(
                    f'model {self.name!r} not found: {_message(exc)}', setup=not self.answered
                ) from None
            except (a.RateLimitError, a.InternalServerError) as exc:
                self._wait(request, attempt, f'{exc.status_code} {_message(exc)}', exc)
                continue
            except a.APIStatusError as exc:
                if exc.status_code in RETRIED_STATUSES:
                    self._wait(request, attempt, f'{exc.status_code} {_message(exc)}', exc)
                    continue
                raise ModelError(
                    f'the model server answered {exc.status_code}: {_message(exc)}'
                ) from None
            except (a.APIConnectionError, RequestTimeoutError) as exc:
                first = not self.answered and not self.reached and attempt == 1
                if first and request.cut is None:  # (a cut request has no time for it)
                    self.probe()  # nothing listens: a set-up problem, said in one line
                said = (
                    exc if isinstance(exc, RequestTimeoutError) else f'{type(exc).__name__}: {exc}'
                )
                self._wait(request, attempt, f'no answer ({said})', None)
                continue
            except UnicodeEncodeError as exc:  # the request itself: never sent
                raise ModelError(f'the request could not be sent ({_short(str(exc))})') from None
            except (a.APIError, ValueError, UnicodeError) as exc:  # a malformed answer
                self._wait(request, attempt, f'a malformed answer ({_short(str(exc))})', None)
                continue
            self.answered += 1
            self.reached = True
            return reply

    def _create(self, request: ModelRequest, attempt: int):
        """One request, on a thread of its own so that it can be given up: after `timeout`
        seconds in all, or at the request's cut (RequestTimeoutError, without a grace
        then). The next attempt gets a new client; the one given up on is closed by the last
        request that used it, once its read ends (each read is bounded by the timeout)."""
        limit, cut_by = self.timeout, ''
        if request.cut is not None:
            left = request.cut - time.monotonic()
            if left <= 0:
                raise ModelError(
                    f'the model service failed: {request.cut_for} was spent before '
                    f'attempt {attempt}',
                    service=True,
                )
            if left < limit:
                limit, cut_by = left, f', all that {request.cut_for} left'
        took_too_long = f'the request took longer than {limit:.0f} s{cut_by}'
        with self._clients_lock:
            client = self.client
            self._in_use[id(client)] = self._in_use.get(id(client), 0) + 1
        outcome: dict = {}
        done = threading.Event()

        def ask() -> None:
            try:
                outcome['response'] = client.messages.create(
                    model=self.name,
                    max_tokens=request.max_tokens,
                    system=request.system,
                    messages=request.messages,
                    timeout=limit,
                )
            except BaseException as exc:  # handed to the caller's thread
                outcome['error'] = exc
            finally:
                done.set()
                self._release(client)

        threading.Thread(target=ask, name='model-request', daemon=True).start()
        grace = 0.0 if request.cut is not None else REQUEST_GRACE_S
        if not done.wait(limit + grace):
            with self._clients_lock:
                retire = self.client is client
                if retire:
                    self.client = self._new_client()
                    self._retired.add(id(client))
                    self._in_use[id(client)] += 1  # released below: closed now if unused
            if retire:
                self._release(client)
            raise RequestTimeoutError(took_too_long)
        if isinstance(outcome.get('error'), self._anthropic.APITimeoutError):
            raise RequestTimeoutError(took_too_long)  # (the SDK's words give no time)
        if 'error' in outcome:
            raise outcome['error']
        return outcome['response']

    def _release(self, client) -> None:
        with self._clients_lock:
            key = id(client)
            self._in_use[key] -= 1
            if self._in_use[key] or key not in self._retired:
                return
            del self._in_use[key]
            self._retired.discard(key)
        client.close()

    def _wait(self, request: ModelRequest, attempt: int, what: str, exc) -> None:
        """Sleep before the next attempt, or raise ModelError (service) when the deadline
        leaves no room for one. A server's `retry-after` is obeyed where it asks for longer
        than the backoff (a `retry-after: 0` must not turn the retries into a flood)."""
        wait = min(LONGEST_WAIT_S, FIRST_WAIT_S * 2 ** min(attempt - 1, 16))
        after = _retry_after(exc)
        if after is not None:
            wait = max(wait, after)
        left = (request.deadline - time.monotonic()) if request.deadline is not None else 1e9
        if wait >= left - 1.0:
            asked = f' (the server asked to wait {after:g} s)' if after and after >= wait else ''
            failed = (
                f'the model service failed: {what}; {attempt} attempt{"s" * (attempt != 1)}, and '
                f'{request.deadline_for} leaves no time for another{asked}'
            )
            self.note(failed)
            raise ModelError(failed, service=True)
        line = f'the model service gave {what}; attempt {attempt + 1} in {wait:.1f} s'
        self.log(line)
        self.note(line)
        time.sleep(wait)

    @staticmethod
    def _reply(response) -> ModelReply:
        """The reply of a Messages API answer; MalformedAnswerError when it is not one."""
        blocks = getattr(response, 'content', None)
        usage = getattr(response, 'usage', None)
        if not isinstance(blocks, list) or usage is None:
            raise MalformedAnswerError(
                f'not a Messages API message: {type(response).__name__} '
                f'{_short(repr(response), 120)}'
            )
        try:
            text = ''.join(str(b.text) for b in blocks if getattr(b, 'type', '') == 'text')
            tokens = int(usage.input_tokens), int(usage.output_tokens)
        except (AttributeError, TypeError, ValueError) as exc:
            raise MalformedAnswerError(f'a message without its text or usage ({exc})') from None
        if min(tokens) < 0:  # a negative cost would give the cost budget back
            raise MalformedAnswerError(f'a message with negative token counts {tokens}')
        try:  # JSON's \ud800 escapes decode to lone surrogates, which no request can resend
            text.encode('utf-8')
        except UnicodeEncodeError as exc:
            raise MalformedAnswerError(
                f'text that is not Unicode: a lone surrogate {text[exc.start]!r} at character '
                f'{exc.start}'
            ) from None
        others = tuple(getattr(b, 'type', '?') for b in blocks if getattr(b, 'type', '') != 'text')
        return ModelReply(text, *tokens, str(getattr(response, 'stop_reason', '') or ''), others)


def _short(text: str, limit: int = 200) -> str:
    text = ' '.join(str(text).split())
    return text if len(text) <= limit else text[:limit] + '...'


def _message(exc) -> str:
    """The service's own words from an error answer (`error.message` of its body), else the
    SDK's message (which repeats the whole body after the status)."""
    body = getattr(exc, 'body', None)
    error = body.get('error') if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get('message'):
        kind = f'{error["type"]}: ' if error.get('type') else ''
        return _short(f'{kind}{error["message"]}')
    return _short(getattr(exc, 'message', str(exc)))


def _retry_after(exc) -> float | None:
    response = getattr(exc, 'response', None)
    value = response.headers.get('retry-after') if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


class ScriptedModel:
    """The baseline without a model: it answers with the task's reference program, one cell
    per reply, and reacts to events like a careful user: a failed cell is run once more from the
    home pose, a second failure ends the episode. It never reads the images. A reference
    program that names `INSTRUCTION` (a task whose instruction changes with the layout) gets
    the start message's instruction as that string, as a model copies it into its program."""

    name = SCRIPTED

    def __init__(
        self,
        cells: list[str],
        retries_per_cell: int = 1,
        block: str = 'python',
        source: str = 'the reference program',
    ) -> None:
        if not cells:
            raise ValueError('the scripted model needs at least one reference cell')
        self.cells = cells
        self.retries_per_cell = retries_per_cell
        self.block = block  # python; call or action (a rung's steps, one per reply); finish
        self.source = source  # what its steps are, in the words of its replies
        self.index = -1
        self.retries = 0

    def complete(self, request: ModelRequest) -> ModelReply:
        needs = request.decision.call == 1 and any(INSTRUCTION in c for c in self.cells)
        given = f'{INSTRUCTION} = {instruction_in(request.messages)!r}'
        if needs and self.block != 'python':  # a statement of its own, one per reply
            return ModelReply(f'The instruction, as given.\n{self._block(given)}', 0, 0)
        text = self._answer(request.decision)
        if needs:
            text = text.replace('<python>\n', f'<python>\n{given}\n', 1)
        return ModelReply(text, 0, 0)

    def _answer(self, d: Decision) -> str:
        n = len(self.cells)
        if d.reason in ('escalation', 'error'):
            if self.retries < self.retries_per_cell:
                self.retries += 1
                return (
                    f'Step {self.index + 1} of {n} stopped ({d.event or d.cell_status}); '
                    f'going home and trying it once more.\n'
                    f'<python>\nhome()\n{self.cells[self.index]}</python>'
                )
            times = ' twice' if self.retries_per_cell else ''
            return (
                f'Step {self.index + 1} of {n} failed{times}.\n'
                f'<finish>gave up: step {self.index + 1} of {self.source} failed{times} '
                f'({d.event or d.cell_status})</finish>'
            )
        self.index += 1
        self.retries = 0
        if self.index >= n:
            return f'Every step of {self.source} ran.\n<finish>{self.source} done</finish>'
        cell = self.cells[self.index]
        return f'Step {self.index + 1} of {n} of {self.source}.\n{self._block(cell)}'

    def _block(self, body: str) -> str:
        if self.block == 'python':
            return f'<python>\n{body}</python>'
        return f'<{self.block}>{body}</{self.block}>'


def make_model(
    name: str,
    cells: list[str] | None,
    timeout: float,
    log: Callable[[str], None] = print,
    interface: str = 'programs',
    api_names: list[str] | None = None,
    actions_from: Path | None = None,
) -> ModelClient:
    """`scripted` (needs the task's reference cells) or a Claude model by name. The scripted
    baseline of the skills rung sends the reference program's statements one per reply
    (interface.skills_steps); where a step cannot be one call it finishes at once, saying why.
    That of the actions rung replays the motions of `actions_from`, a programs-rung run of the
    same episode (harness_driver.actions_baseline)."""
    if name == SCRIPTED:
        if cells is None:
            raise ModelError('the scripted model needs a task with a reference program', setup=True)
        if interface == 'skills':
            from harness_driver.interface import skills_steps

            try:
                steps = skills_steps(cells, list(api_names or []))
            except ValueError as exc:
                why = f'the reference program cannot run one call per reply: {exc}'
                steps = [f'finish({why!r})']
            return ScriptedModel(steps, retries_per_cell=0, block='call')
        if interface == 'actions':
            from harness_driver.actions_baseline import SourceRunError, recorded_actions

            if actions_from is None:
                raise ModelError(
                    "the scripted actions baseline replays a programs-rung run's motions: "
                    'name its run folder (--actions-from)',
                    setup=True,
                )
            try:
                steps = recorded_actions(actions_from)
            except SourceRunError as exc:
                raise ModelError(f'--actions-from: {exc}', setup=True) from None
            if not steps:
                why = 'the reference program moved nothing: no action to replay'
                return ScriptedModel([why], retries_per_cell=0, block='finish')
            motions = "the reference program's recorded motions"
            return ScriptedModel(steps, retries_per_cell=0, block='action', source=motions)
        return ScriptedModel(cells)
    return AnthropicModel(name, timeout, log)
