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

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
from harness_reactive.guards import Guard, Watch, check_action
from harness_reactive.stage import ProgramStage, ReactiveResult
from harness_skills.skill_table import SKILLS, SkillSpec
from harness_types.docs import render_doc
from harness_types.execution import EVENTS, Execution
from harness_types.scene import LocatedObject

from harness_kernel.cell import EpisodeEnded, Escalation, Finished, HandlerError, ReactiveTimeout
from harness_kernel.perception.colour import COLOUR_NAMES
from harness_kernel.perception.measure import SHAPE_WORDS

# The API in the order the model reads it.
API_NAMES = (
    'move_joints',
    'move_eef',
    'open_gripper',
    'close_gripper',
    'home',
    'when',
    'watch',
    'clear_guards',
    'run_controller',
    'on',
    'state',
    'look',
    'show',
    'locate',
    'pick',
    'place',
    'release',
    'scene',
    'verify',
    'push',
    'press',
    'transfer',
    'list_policies',
    'start',
    'run_policy',
    'predict_future',
    'finish',
)
# The learned half: enabled only with a policy catalogue (kernel.policies).
LEARNED_NAMES = ('list_policies', 'start', 'run_policy', 'predict_future')


def enabled_names(api_names: list[str] | None, policies: bool) -> list[str]:
    """The API names an episode enables: the configured ones (None = all), without the
    learned half unless policies are enabled."""
    names = list(API_NAMES) if api_names is None else list(api_names)
    return [n for n in names if policies or n not in LEARNED_NAMES]


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
        for name in API_NAMES:
            method = self._skill_method(SKILLS[name]) if name in SKILLS else getattr(self, name)
            out[name] = self._public(name, method)
        return out

    def _public(self, name: str, method: Callable) -> Callable:
        if name in self.enabled:

            @functools.wraps(method)
            def public(*args, **kwargs):
                return method(*args, **kwargs)

        else:

            def public(*args, **kwargs):
                raise PermissionError(
                    f'{name}() is not enabled in this episode (kernel.api); enabled: '
                    f'{", ".join(self.enabled) or "none"}'
                )

            public.__signature__ = inspect.signature(method)
        public.__name__ = public.__qualname__ = name
        public.__doc__ = render_doc(inspect.getdoc(method) or '', self.doc_values)
        return public

    def _skill_method(self, spec: SkillSpec) -> Callable:
        signature = inspect.signature(spec.api)

        @functools.wraps(spec.api)
        def skill(*args, **kwargs):
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f'{spec.name}(): {exc}') from None
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            slots = {}
            for argument, slot in spec.program_callbacks.items():
                fn = arguments.pop(argument)
                if fn is not None and not callable(fn):
                    raise TypeError(f'{spec.name}(): {argument} must be a function of obs')
                slots[slot] = fn
            if 'controller' in spec.program_callbacks.values() and slots['controller'] is None:
                raise TypeError(f'{spec.name}() needs a function of the observation')
            previous = {slot: getattr(self.stage, slot) for slot in slots}
            for slot, fn in slots.items():
                setattr(self.stage, slot, fn)
            try:
                return self._call(spec.name, **arguments)
            finally:
                for slot, fn in previous.items():
                    setattr(self.stage, slot, fn)

        return skill

    def when(self, predicate, action: str = 'stop', name: str | None = None):
        """Add a guard: during every later execution, `predicate(obs)` runs each tick
        ({control_hz:g} Hz, {reactive_budget_ms:g} ms budget, no I/O or sleeping). When it
        returns True the execution ends: action 'stop' (arm stops), 'hold' (keeps its last
        command), 'open_gripper', or an event name in CAPITALS that the execution then ends
        with. obs has .arms['left'] (.tcp_position, .joints, .gripper, .grip_force), .left,
        .right, .step, .time and .signals(). Returns the guard name."""
        check_action(action)
        if not callable(predicate):
            raise TypeError('when() needs a function of the observation as its predicate')
        guard = Guard(name or f'guard_{len(self.stage.guards) + 1}', predicate, action)
        self.stage.guards.add(guard)
        return guard.name

    def watch(self, signal: str, low: float, high: float, action: str = 'stop', name=None):
        """Add a watch: later executions end when the named signal leaves [low, high].
        Signals: <arm>_joint1..6, <arm>_tcp_x|y|z, <arm>_link6_x|y|z, <arm>_gripper,
        <arm>_grip_force (N), <arm>_contact (0/1), with <arm> left or right."""
        item = Watch(name or f'watch_{signal}', signal, float(low), float(high), action)
        self.stage.guards.add(item)
        return item.name

    def clear_guards(self, names=None):
        """Remove guards and watches by name (all when `names` is None); returns the names."""
        return self.stage.guards.clear(None if names is None else list(names))

    def on(self, event: str, handler):
        """Register `handler(execution)` for a non-nominal event name (or '*' for any). It
        runs when a skill ends with that event; return True to absorb the event and let the
        program go on, anything else escalates it to the model. `handler` None removes it."""
        if event != '*' and not (event in EVENTS or (isinstance(event, str) and event.isupper())):
            raise ValueError(f"on() needs an event name such as BLOCKED or '*', got {event!r}")
        if handler is not None and not callable(handler):
            raise TypeError('on() needs a function as the handler (or None to remove it)')
        if handler is None:
            self.handlers.pop(event, None)
        else:
            self.handlers[event] = handler

    def state(self):
        """The measured robot state: .left/.right (.joints, .gripper, .tcp (= .tcp_position),
        .tcp_quat, .grip_force), .arms, .step and .time (s of episode time)."""
        return self._call('state')

    def look(self, camera: str = 'cam_head'):
        """A fresh view of a camera (cam_head, cam_left_wrist or cam_right_wrist; or
        task_picture, the picture of a task that shows its target instead of naming it): a
        CameraView with .rgb (H x W x 3 uint8 array), .depth (H x W float32, m along the optical
        axis), .fx, .fy, .cx, .cy (pixels), .position and .rotation (the optical frame in the
        world: z forward, x right, y down), .project(points) and .back_project(mask)."""
        return self._call('look', camera=str(camera))

    def show(self, image_or_camera='cam_head', caption: str = ''):
        """Attach an image (an array, a CameraView, or a camera name for a fresh view) to this
        turn's report for the model."""
        image = getattr(image_or_camera, 'rgb', image_or_camera)
        if not isinstance(image, str):
            image = np.asarray(image)
        return self._call('show', image=image, caption=str(caption))

    def locate(self, query: str = ''):
        """Find objects with the cameras: a list of LocatedObject (.id, .label e.g. 'red
        cube': colour then shape, .position [x, y, z] centre of its bounding box in m, .size
        [x, y, z] extent, .top height of its top surface, .cameras that see it). Every word of
        `query` must name the object's colour ({colour_words}) or shape ({shape_words});
        '' = all; 'left',
        'right', 'biggest' or 'smallest' keep only the one extreme match. [] when nothing
        matches. Held and stacked objects are measured from their own points. An object keeps
        its id for the whole episode."""
        return self._call('locate', query=str(query))

    def pick(
        self,
        obj,
        arm: str = '',
        approach=None,
        grasp_height=None,
        lift: float = 0.12,
        along: float = 0.0,
        toward=None,
    ):
        """Grasp a located object from above and lift it: open, move above (approach m over
        the grasp), descend to grasp_height (default: just below the object's centre), close,
        lift by `lift` m. along: grasp this many m from the centre along world y (to hold one
        end of a long object). toward: where the object goes next (a located object to put it
        on or into, or [x, y, z] for its centre): the tool is tilted so that it also reaches
        there, and place() can keep the object as it was picked (upright). Returns a Grip
        (.arm, .object_id). Nothing between the fingers after closing, or an object out of
        reach, ends with SKILL_ERROR. arm '' = the nearer arm."""
        if not isinstance(obj, LocatedObject):
            raise TypeError('pick() needs an object from locate()')
        return self._call(
            'pick',
            obj=obj,
            arm=arm,
            approach=approach,
            grasp_height=grasp_height,
            lift=lift,
            along=along,
            toward=toward,
        )

    def place(
        self,
        position=None,
        onto=None,
        into=None,
        arm: str = '',
        clearance: float = 0.005,
        approach: float = 0.08,
    ):
        """Put down what an arm holds: at `position` [x, y, z] (the object's centre), `onto`
        a located object (resting `clearance` m above its top), or `into` a located container;
        come down from `approach` m above, open the gripper and rise 8 cm. arm '' = the arm
        that holds something."""
        return self._call(
            'place',
            position=position,
            onto=onto,
            into=into,
            arm=arm,
            clearance=clearance,
            approach=approach,
        )

    def release(self, arm: str = ''):
        """Open a gripper where it is and rise 8 cm."""
        return self._call('release', arm=arm)

    def scene(self):
        """Measure the scene again: `objects, held = scene()` gives every object located so
        far (a list of LocatedObject, by id, at its new position) and which object each arm
        holds ({'left': id or None, 'right': ...})."""
        return self._call('scene')

    def verify(self, claim: str):
        """Ask the verifier (a model shown fresh camera views) whether `claim` about the scene
        holds, e.g. verify('the red cube is inside the bowl'). Returns a Verdict: `.yes`,
        `.sentence` (its reason), `.answered`; true in an `if` when yes. Costs model tokens and
        one model call of the episode's budget: use it for what the measurements cannot tell."""
        return self._call('verify', claim=str(claim))

    def push(self, obj, direction, distance: float, arm: str = '', height=None):
        """Push a located object along `direction` [dx, dy] (table plane) by `distance` m
        (at most 0.3) without grasping: the closed fingertips start 3 cm behind it, low
        (`height` m above the table, default from its size), and move in a straight line,
        then rise. Returns the executions."""
        return self._call(
            'push', obj=obj, direction=direction, distance=distance, arm=arm, height=height
        )

    def press(self, target, arm: str = '', force: float = 5.0, depth: float = 0.02):
        """Press a point [x, y, z] or the top of a located object with the closed fingertips:
        descend in a straight line until they feel `force` N (PREDICATE_SATISFIED) or go
        `depth` m below the point (COMPLETED), then rise. Returns the executions; the press
        itself is the second to last."""
        return self._call('press', target=target, arm=arm, force=force, depth=depth)

    def transfer(self, to_arm: str = '', along: float = 0.05, at=None):
        """Hand the held object to the other arm: the holder brings it to `at` (its TCP, m;
        default: the first point between the arms that both reach), the other arm grasps it
        `along` m past its centre (pick the object `along` m off its centre the other way
        first, e.g. pick(bar, along=-0.05)), then the holder opens and rises. Returns the
        receiver's Grip."""
        return self._call('transfer', to_arm=to_arm, along=along, at=at)

    def list_policies(self):
        """The policies this station has, one line each: what it is, the task kinds it
        learned and which of them it usually finishes, its action rate and cameras."""
        return self._call('list_policies')

    def start(self, strategy: str, kind: str):
        """Choose how the task is solved, once, before anything moves (with policies enabled
        every execution before start() ends with SKILL_ERROR). strategy 'A': a policy that
        learned `kind` runs the whole task from the untouched start pose (run_policy) while
        you supervise (choose it when the policy usually finishes that kind); 'C': a policy
        that learned `kind` first, then your programs finish what it leaves; 'B': programs
        only, run_policy is refused (tasks no policy learned, e.g. picking by a number or a
        label). kind: the task kind in the catalogue's words (see list_policies()). Returns a
        sentence; for A and C it names the policy to run. The same choice again changes
        nothing; another one raises RuntimeError."""
        return self._call('start', strategy=str(strategy), kind=str(kind))

    def predict_future(
        self, policy: str = '', actions=None, seconds: float = 2.0, instruction: str = ''
    ):
        """Ask the world model what would happen, without moving anything: `policy` (a name
        list_policies() gives, sent `instruction`) or `actions` (N x 14 absolute targets in the
        command layout, one per tick) rolled `seconds` (at most 60) of simulated time ahead.
        Returns a dict: 'model' (what predicted; a stand-in says it is one), 'times' (N,) s
        and 'states' (N x 14) the predicted measured joints and grippers, 'images' (camera ->
        H x W x 3 colour image of the predicted end state, where the model gives them),
        'objects' (LocatedObjects found in the predicted cam_head view, with the ids locate()
        gives),
        'stopped' (why the prediction ended before `seconds`: the policy said done, the
        actions ran out, the shield would reject, or the model's time bound passed; '' when it did
        not)."""
        return self._call(
            'predict_future',
            policy=str(policy),
            actions=None if actions is None else np.asarray(actions, dtype=float),
            seconds=float(seconds),
            instruction=str(instruction),
        )

    def finish(self, summary: str = ''):
        """End the episode: the task is done (or cannot be done). The harness then opens idle
        grippers, returns the arms home and reads the outcome."""
        return self._call('finish', summary=str(summary))


def api_reference(names: list[str] | None = None, doc_values: dict | None = None) -> str:
    """The program API as the model reads it: each enabled function's signature and rendered
    docstring, in the API's order; `names` selects them (None = all). Unknown names:
    ValueError."""
    api = ProgramApi(enabled=names, doc_values=doc_values)
    parts = []
    for name, fn in api.functions().items():
        if name not in api.enabled:
            continue
        doc = fn.__doc__ or ''
        parts.append(
            f'{name}{inspect.signature(fn)}\n'
            + '\n'.join(f'    {ln}' if ln else '' for ln in doc.splitlines())
        )
    return '\n\n'.join(parts)
