"""The program API: the names a program sees, as plain methods. Their docstrings are what the
model reads (`api_reference`); configured values in them are rendered from the configuration.

This runs in the untrusted program process. Guards, `until` predicates, controllers and event
handlers run here, on the program's one thread; everything that touches the robot or the
cameras is a request to the kernel node over the channel (`KernelLink`), which does it and
records it. Every motion is one bounded execution on the skill server and returns an
`Execution` (`.event`, `.ok`, `.detail`, `.trace`). A non-nominal event goes to the handler
registered with `on(event, handler)`; without one, or when the handler does not return True,
the cell stops and the model is called with the event (escalation).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
from harness_perception.colour import COLOUR_NAMES
from harness_perception.measure import SHAPE_WORDS
from harness_reactive.guards import Guard, Watch, check_action
from harness_reactive.stage import ProgramStage, ReactiveResult
from harness_types.docs import render_doc
from harness_types.execution import EVENTS, Execution
from harness_types.scene import LocatedObject

from harness_kernel.api_table import API, API_NAMES, ApiName
from harness_kernel.cell import EpisodeEnded, Escalation, Finished, HandlerError, ReactiveTimeout

# Exceptions the kernel node may report for a bad call, raised as themselves in the program.
CALL_ERRORS = {
    e.__name__: e for e in (TypeError, ValueError, KeyError, RuntimeError, PermissionError)
}


class KernelLink:
    """The program's side of the channel: one request at a time; while it waits for the
    answer, it serves the kernel's reactive steps and event dispatches on this thread."""

    def __init__(self, channel, api: ProgramApi) -> None:
        self.channel = channel
        self.api = api
        self._ids = 0

    def request(self, message: dict) -> dict:
        self._ids += 1
        message['id'] = self._ids
        self.channel.send(message)
        while True:
            incoming = self.channel.recv()
            op = incoming.get('op')
            if op == 'reply' and incoming.get('id') == message['id']:
                return incoming
            if op == 'reactive':
                self.channel.send({'op': 'reactive_result', 'result': self._reactive(incoming)})
            elif op == 'event':
                self.channel.send({'op': 'handled', **self.api.handle(incoming['execution'])})
            else:
                raise RuntimeError(f'the kernel sent an unexpected message {op!r}')

    def _reactive(self, message: dict) -> dict:
        try:
            r = self.api.stage.step(message['obs'], bool(message.get('call_controller', True)))
        except ReactiveTimeout:
            r = ReactiveResult(fault='reactive code did not return (an endless loop?)')
        except Exception as exc:
            r = ReactiveResult(fault=f'the reactive stage failed: {type(exc).__name__}: {exc}')
        return {
            'fault': r.fault,
            'guard_fired': r.guard_fired,
            'guard_action': r.guard_action,
            'guard_detail': r.guard_detail,
            'until_satisfied': r.until_satisfied,
            'targets': {k: np.asarray(v, float) for k, v in r.targets.items()},
            'evaluated': list(r.evaluated),
        }


SHAPE_DOC = ', '.join(f'{name} ({", ".join(words[1:])})' for name, words in SHAPE_WORDS.items())
COLOUR_DOC = ', '.join(COLOUR_NAMES)


class ProgramApi:
    """Builds the API functions a program's namespace holds. `link` reaches the kernel node
    (None: only the reference text); `enabled` are the names the configuration enables (None:
    all); `doc_values` fill the docstrings' configured values."""

    def __init__(
        self,
        link_channel=None,
        stage: ProgramStage | None = None,
        enabled: list[str] | None = None,
        doc_values: dict | None = None,
    ) -> None:
        self.stage = stage or ProgramStage(
            budget_ms=float((doc_values or {}).get('reactive_budget_ms', 20.0))
        )
        self.link = KernelLink(link_channel, self) if link_channel is not None else None
        self.enabled = list(API_NAMES) if enabled is None else list(enabled)
        unknown = sorted(set(self.enabled) - set(API_NAMES))
        if unknown:
            raise ValueError(f'unknown API names {unknown}; the API has: {", ".join(API_NAMES)}')
        # The words locate() understands come from perception itself, whatever the config says.
        self.doc_values = {'shape_words': SHAPE_DOC, 'colour_words': COLOUR_DOC}
        self.doc_values.update(doc_values or {})
        self.handlers: dict[str, Callable[[Execution], bool]] = {}

    # The channel ---------------------------------------------------------------------------

    def _call(self, name: str, /, **args: Any) -> Any:  # `name` may also be an argument's
        if self.link is None:
            raise RuntimeError('this API is not connected to a kernel')
        reply = self.link.request(
            {'op': 'call', 'name': name, 'args': args, 'reactive': self.stage.active}
        )
        if 'error' in reply:
            raise CALL_ERRORS.get(reply['error'], RuntimeError)(reply['message'])
        stop = reply.get('stop')
        if stop == 'escalated':
            raise Escalation(reply.get('execution'))
        if stop == 'episode_ended':
            raise EpisodeEnded(reply.get('execution'))
        if stop == 'finished':
            raise Finished(reply.get('summary', ''))
        if stop == 'handler_error':
            raise HandlerError(reply.get('message', 'a handler raised'))
        return reply.get('value')

    def handle(self, execution: Execution) -> dict:
        """Run the handler registered for a non-nominal event: {'absorbed': bool} or
        {'error': sentence} when the handler raised."""
        handler = self.handlers.get(execution.event) or self.handlers.get('*')
        if handler is None:
            return {'absorbed': False}
        try:
            return {'absorbed': handler(execution) is True}
        except (Escalation, EpisodeEnded, Finished, HandlerError):
            raise
        except Exception as exc:
            return {
                'error': f'the handler for {execution.event} raised {type(exc).__name__}: {exc}'
            }

    # The names a program sees ---------------------------------------------------------------

    def functions(self) -> dict[str, Callable]:
        """The namespace's API: enabled names call through, disabled ones say so."""
        out = {}
        for name, entry in API.items():
            method = getattr(self, name) if entry.handler == 'program' else self._caller(entry)
            out[name] = self._public(entry, method)
        return out

    def _public(self, entry: ApiName, method: Callable) -> Callable:
        name = entry.name
        if name in self.enabled:

            def public(*args, **kwargs):
                return method(*args, **kwargs)

        else:

            def public(*args, **kwargs):
                raise PermissionError(
                    f'{name}() is not enabled in this episode (kernel.api); enabled: '
                    f'{", ".join(self.enabled) or "none"}'
                )

        public.__signature__ = entry.signature()
        public.__name__ = public.__qualname__ = name
        public.__doc__ = render_doc(entry.doc, self.doc_values)
        return public

    def _caller(self, entry: ApiName) -> Callable:
        """A name the kernel handles: its arguments bound to the stub's signature, the
        functions of obs among them set in the reactive stage for the call's duration, the
        rest sent to the kernel (objects checked here, text as text, images as colours)."""
        signature = entry.signature()

        def call(*args, **kwargs):
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f'{entry.name}(): {exc}') from None
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            slots = {}
            for argument, slot in entry.program_callbacks.items():
                fn = arguments.pop(argument)
                if fn is not None and not callable(fn):
                    raise TypeError(f'{entry.name}(): {argument} must be a function of obs')
                slots[slot] = fn
            if 'controller' in entry.program_callbacks.values() and slots['controller'] is None:
                raise TypeError(f'{entry.name}() needs a function of the observation')
            for argument, value in arguments.items():
                arguments[argument] = _to_send(
                    entry.argument(argument), value, entry.where(argument)
                )
            previous = {slot: getattr(self.stage, slot) for slot in slots}
            for slot, fn in slots.items():
                setattr(self.stage, slot, fn)
            try:
                return self._call(entry.name, **arguments)
            finally:
                for slot, fn in previous.items():
                    setattr(self.stage, slot, fn)

        return call

    # The names the program handles itself (their stubs and docstrings: api_table) -----------

    def when(self, predicate, action='stop', name=None):
        check_action(action)
        if not callable(predicate):
            raise TypeError('when() needs a function of the observation as its predicate')
        guard = Guard(name or f'guard_{len(self.stage.guards) + 1}', predicate, action)
        self.stage.guards.add(guard)
        return guard.name

    def watch(self, signal, low, high, action='stop', name=None):
        item = Watch(name or f'watch_{signal}', signal, float(low), float(high), action)
        self.stage.guards.add(item)
        return item.name

    def clear_guards(self, names=None):
        return self.stage.guards.clear(None if names is None else list(names))

    def on(self, event, handler):
        if event != '*' and not (event in EVENTS or (isinstance(event, str) and event.isupper())):
            raise ValueError(f"on() needs an event name such as BLOCKED or '*', got {event!r}")
        if handler is not None and not callable(handler):
            raise TypeError('on() needs a function as the handler (or None to remove it)')
        if handler is None:
            self.handlers.pop(event, None)
        else:
            self.handlers[event] = handler


def _to_send(argument, value: Any, where: str) -> Any:
    """An argument as the program sends it: what the channel carries and the kernel checks
    again (an object from locate(), text, an image's colours, numbers in rows)."""
    kind = argument.kind
    if value is None and argument.optional:
        return None
    if kind == 'object' and not isinstance(value, LocatedObject):
        raise TypeError(f'{where} needs an object from locate()')
    if kind in ('text', 'prose'):
        return str(value)
    if kind == 'image':
        image = getattr(value, 'rgb', value)
        return image if isinstance(image, str) else np.asarray(image)
    if kind == 'array':
        return np.asarray(value, dtype=float)
    return value


def api_reference(names: list[str] | None = None, doc_values: dict | None = None) -> str:
    """The program API as the model reads it: each enabled function's signature and rendered
    docstring, in the API's order; `names` selects them (None = all). Unknown names:
    ValueError."""
    api = ProgramApi(enabled=names, doc_values=doc_values)
    parts = []
    for name, fn in api.functions().items():
        if name in api.enabled:
            doc = fn.__doc__ or ''
            parts.append(
                f'{name}{inspect.signature(fn)}\n'
                + '\n'.join(f'    {ln}' if ln else '' for ln in doc.splitlines())
            )
    return '\n\n'.join(parts)
