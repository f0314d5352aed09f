"""The program API: the names a program sees. Their docstrings are what the model reads.

Every motion is one bounded execution on the skill server and returns an `Execution`
(`.event`, `.ok`, `.detail`, `.trace`). A non-nominal event goes to the handler registered with
`on(event, handler)`; without one, or when the handler does not return True, the cell stops
and the model is called with the event (escalation).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Protocol

from harness_reactive.guards import Guard, Watch, check_action
from harness_reactive.stage import ProgramStage
from harness_skills.perception import LocatedObject, Perception, View

from harness_kernel.cell import EpisodeEnded, Escalation, Finished, HandlerError
from harness_kernel.contact import ContactSkills
from harness_kernel.records import Execution, SceneMeasure, StateView, Verdict

EVENTS = (
    'COMPLETED',
    'PREDICATE_SATISFIED',
    'TIMEOUT',
    'BLOCKED',
    'GUARD_TRIGGERED',
    'REGION_EXIT',
    'SHIELD_REJECTED',
    'REACTIVE_FAULT',
    'SKILL_ERROR',
    'EPISODE_ENDED',
)


class RobotPort(Protocol):
    """How the API reaches the skill server and the worker (ROS in the kernel node)."""

    def execute(self, skill: str, goal: dict, reactive: bool) -> Execution: ...

    def state(self) -> StateView: ...

    def image(self, camera: str) -> Any: ...

    def views(self) -> list[View]: ...

    def reachable(self, arm: str, position: Any, quat: Any) -> bool: ...

    def verify(self, claim: str) -> Verdict: ...


class ProgramApi:
    """Builds the API functions bound to one robot port, one program stage and one log."""

    def __init__(
        self,
        robot: RobotPort,
        stage: ProgramStage,
        log: Callable[[dict], None] = lambda record: None,
        table_top_z: float = 0.765,
    ) -> None:
        self.robot = robot
        self.perception = Perception(table_top_z)
        self.contact = ContactSkills(
            self._execute,
            lambda *a: robot.reachable(*a),
            self._fail,
            lambda: robot.state(),
            table_top_z,
        )
        self.stage = stage
        self.log = log
        self.handlers: dict[str, Callable[[Execution], bool]] = {}
        self.shown: list[tuple[str, Any]] = []
        self.executions: list[Execution] = []
        self.events_handled = 0

    # Plumbing -----------------------------------------------------------------------------

    def _logged(self, name: str, args: dict, fn: Callable[[], Any]) -> Any:
        start = time.monotonic()
        try:
            result = fn()
        except BaseException as exc:
            self.log(
                {
                    'call': name,
                    'args': _jsonable(args),
                    'raised': type(exc).__name__,
                    'detail': str(exc),
                    'wall_s': round(time.monotonic() - start, 4),
                }
            )
            raise
        self.log(
            {
                'call': name,
                'args': _jsonable(args),
                'result': _jsonable(result),
                'wall_s': round(time.monotonic() - start, 4),
            }
        )
        return result

    def _execute(self, skill: str, goal: dict) -> Execution:
        execution = self.robot.execute(skill, goal, self.stage.active)
        self.executions.append(execution)
        return self._dispatch(execution)

    def _fail(self, skill: str, arm: str, detail: str) -> Execution:
        """A contact skill that could not do what was asked: SKILL_ERROR, through the handlers."""
        execution = Execution(skill, arm, 'SKILL_ERROR', detail, [detail])
        self.executions.append(execution)
        return self._dispatch(execution)

    def _set_until(self, predicate: Callable) -> Callable[[], None]:
        """Install a kernel-side `until` for one execution; returns the function that undoes it."""
        previous = self.stage.until
        self.stage.until = predicate

        def restore() -> None:
            self.stage.until = previous

        return restore

    def measure_scene(self) -> SceneMeasure:
        """Every located object measured again and each arm's grip (the turn report)."""
        held = {
            arm: getattr(self.contact.grips.get(arm), 'object_id', None)
            for arm in ('left', 'right')
        }
        known = set(self.perception.known_ids())
        if not known:
            return SceneMeasure([], held, measured=False)
        objects = [o for o in self.perception.locate(self.robot.views()) if o.id in known]
        return SceneMeasure(objects, held)

    def _dispatch(self, execution: Execution) -> Execution:
        if execution.ok:
            return execution
        if execution.event == 'EPISODE_ENDED':
            raise EpisodeEnded(execution, execution)
        handler = self.handlers.get(execution.event) or self.handlers.get('*')
        if handler is None:
            raise Escalation(execution, execution)
        try:
            absorbed = handler(execution)
        except (Escalation, EpisodeEnded, Finished):
            raise
        except Exception as exc:
            raise HandlerError(
                f'the handler for {execution.event} raised {type(exc).__name__}: {exc}'
            ) from exc
        if absorbed is True:
            execution.handled = True
            self.events_handled += 1
            return execution
        raise Escalation(execution, execution)

    def functions(self) -> dict[str, Callable]:
        """The names a program sees."""
        api = self

        def move_joints(positions, arm: str = '', speed: float = 0.0, max_seconds: float = 0.0):
            """Move one arm's six joints to `positions` (rad) as one bounded execution.

            arm: 'left', 'right', or '' for the arm whose joints are nearest. speed: rad/s of
            the fastest joint (default 1.0). max_seconds: simulated-time bound (default: the
            planned duration plus margin). Returns an Execution; BLOCKED when the arm settles
            more than 0.05 rad short (something is in the way).
            """
            goal = dict(
                arm=arm,
                positions=[float(v) for v in positions],
                speed=float(speed),
                max_seconds=float(max_seconds),
            )
            return api._logged('move_joints', goal, lambda: api._execute('move_joints', goal))

        def move_eef(
            position,
            quat=None,
            arm: str = '',
            speed: float = 0.0,
            max_seconds: float = 0.0,
            region=None,
        ):
            """Move a TCP to `position` [x, y, z] (m, world frame) through free space.

            quat: optional orientation [w, x, y, z]; without it only the position is solved.
            arm: 'left', 'right' or '' for the arm whose TCP is nearer. The path avoids the
            table and objects (the worker plans one when a straight joint move would collide).
            region: optional ([xmin, ymin, zmin], [xmax, ymax, zmax]); leaving it ends the
            execution with REGION_EXIT. An unreachable target gives SKILL_ERROR.
            """
            goal = dict(
                arm=arm,
                position=[float(v) for v in position],
                quat=None if quat is None else [float(v) for v in quat],
                speed=float(speed),
                max_seconds=float(max_seconds),
                region=region,
            )
            return api._logged('move_eef', goal, lambda: api._execute('move_eef', goal))

        def open_gripper(arm: str = '', fraction: float = 1.0):
            """Open a gripper to `fraction` (1 = fully open, 88 mm). arm '' opens both."""
            goal = dict(arm=arm, target=float(fraction))
            return api._logged('open_gripper', goal, lambda: api._execute('open_gripper', goal))

        def close_gripper(arm: str = '', fraction: float = 0.0):
            """Close a gripper (to `fraction`, default 0: squeeze). The result's `.holding` says
            whether the fingers stopped on something."""
            goal = dict(arm=arm, target=float(fraction))
            return api._logged('close_gripper', goal, lambda: api._execute('close_gripper', goal))

        def home(arm: str = ''):
            """Return an arm ('' = both) to its start pose (joints 0) on a collision-free path."""
            goal = dict(arm=arm)
            return api._logged('home', goal, lambda: api._execute('home', goal))

        def when(predicate, action: str = 'stop', name: str | None = None):
            """Add a guard: during every later execution, `predicate(obs)` runs each tick (25 Hz,
            20 ms budget, no I/O or sleeping). When it returns True the execution ends: action
            'stop' (arm stops), 'hold' (keeps its last command), 'open_gripper', or an event name
            in CAPITALS that the execution then ends with. obs has .arms['left'].tcp_position,
            .joints, .gripper, .grip_force, .step, .time and .signals(). Returns the guard name."""
            check_action(action)
            if not callable(predicate):
                raise TypeError('when() needs a function of the observation as its predicate')
            guard = Guard(name or f'guard_{len(api.stage.guards) + 1}', predicate, action)
            api.stage.guards.add(guard)
            return api._logged('when', {'name': guard.name, 'action': action}, lambda: guard.name)

        def watch(
            signal: str, low: float, high: float, action: str = 'stop', name: str | None = None
        ):
            """Add a watch: later executions end when the named signal leaves [low, high].
            Signals: <arm>_joint1..6, <arm>_tcp_x|y|z, <arm>_link6_x|y|z, <arm>_gripper,
            <arm>_grip_force (N), <arm>_contact (0/1), with <arm> left or right."""
            item = Watch(name or f'watch_{signal}', signal, float(low), float(high), action)
            api.stage.guards.add(item)
            return api._logged(
                'watch',
                {'name': item.name, 'signal': signal, 'low': low, 'high': high, 'action': action},
                lambda: item.name,
            )

        def clear_guards(names=None):
            """Remove guards and watches by name (all when `names` is None); returns the names."""
            return api._logged(
                'clear_guards',
                {'names': names},
                lambda: api.stage.guards.clear(None if names is None else list(names)),
            )

        def run_controller(
            fn,
            until=None,
            max_seconds: float = 5.0,
            region=None,
            hz: float = 25.0,
            cameras=(),
            camera_hz: float = 0.0,
        ):
            """Run `fn(obs)` every 1/hz s of simulated time; it returns targets: {'left': 6 joints},
            {'left_eef': [x, y, z] or [x, y, z, qw, qx, qy, qz]} (solved by IK), {'left_gripper':
            fraction}, same for right. Ends when `until(obs)` holds (PREDICATE_SATISFIED), a guard
            fires, or max_seconds pass (TIMEOUT). cameras: names whose images arrive in
            obs.images at camera_hz. Each call has the 20 ms budget; every command is shielded."""
            if not callable(fn):
                raise TypeError('run_controller needs a function of the observation')
            goal = dict(
                hz=float(hz),
                cameras=list(cameras),
                camera_hz=float(camera_hz),
                max_seconds=float(max_seconds),
                region=region,
            )
            api.stage.controller, api.stage.until = fn, until
            try:
                return api._logged(
                    'run_controller', goal, lambda: api._execute('run_controller', goal)
                )
            finally:
                api.stage.controller = api.stage.until = None

        def on(event: str, handler):
            """Register `handler(execution)` for a non-nominal event name (or '*' for any). It
            runs when a skill ends with that event; return True to absorb the event and let the
            program go on, anything else escalates it to the model."""
            if event != '*' and not (event in EVENTS or event.isupper()):
                raise ValueError(f"on() needs an event name such as BLOCKED or '*', got {event!r}")
            if handler is not None and not callable(handler):
                raise TypeError('on() needs a function as the handler (or None to remove it)')
            if handler is None:
                api.handlers.pop(event, None)
            else:
                api.handlers[event] = handler
            return api._logged('on', {'event': event}, lambda: None)

        def state():
            """The measured robot state: .left/.right (joints, gripper, tcp, tcp_quat,
            grip_force), .step and .time."""
            return api._logged('state', {}, api.robot.state)

        def look(camera: str = 'cam_head'):
            """A fresh RGB image (H x W x 3 numpy array) from cam_head, cam_left_wrist or
            cam_right_wrist."""
            return api._logged('look', {'camera': camera}, lambda: api.robot.image(camera))

        def show(image_or_camera='cam_head', caption: str = ''):
            """Attach an image (an array, or a camera name for a fresh view) to this turn's report
            for the model."""
            image = (
                api.robot.image(image_or_camera)
                if isinstance(image_or_camera, str)
                else image_or_camera
            )
            api.shown.append((caption, image))
            return api._logged('show', {'caption': caption}, lambda: None)

        def locate(query: str = ''):
            """Find objects with the cameras: a list of LocatedObject (.id, .label, .position
            [x, y, z] centre in m, .size [x, y, z] extent, .top height of the top surface,
            .cameras that see it) whose label contains every word of `query` ('' = all). An
            object keeps its id for the whole episode."""
            return api._logged(
                'locate', {'query': query}, lambda: api.perception.locate(api.robot.views(), query)
            )

        def pick(
            obj,
            arm: str = '',
            approach=None,
            grasp_height=None,
            lift: float = 0.12,
            along: float = 0.0,
        ):
            """Grasp a located object from above and lift it: open, move above (approach m over
            the grasp), descend to grasp_height (default: just below the object's centre), close,
            lift by `lift` m. along: grasp this many m from the centre along world y (to hold one
            end of a long object). Returns a Grip (.arm, .object_id). Nothing between the fingers
            after closing, or an object out of reach, ends with SKILL_ERROR. arm '' = the nearer
            arm."""
            if not isinstance(obj, LocatedObject):
                raise TypeError('pick() needs an object from locate()')
            return api._logged(
                'pick',
                {'object': obj.id, 'arm': arm},
                lambda: api.contact.pick(obj, arm, approach, grasp_height, lift),
            )

        def place(
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
            return api._logged(
                'place',
                {
                    'position': position,
                    'onto': getattr(onto, 'id', None),
                    'into': getattr(into, 'id', None),
                    'arm': arm,
                },
                lambda: api.contact.place(position, onto, into, arm, clearance, approach),
            )

        def push(obj, direction, distance: float, arm: str = '', height=None):
            """Push a located object along `direction` [dx, dy] (table plane) by `distance` m
            (at most 0.3) without grasping: the closed fingertips start 3 cm behind it, low
            (`height` m above the table, default from its size), and move in a straight line,
            then rise. Returns the executions."""
            return api._logged(
                'push',
                {
                    'object': getattr(obj, 'id', None),
                    'direction': list(direction),
                    'distance': distance,
                    'arm': arm,
                },
                lambda: api.contact.push(obj, direction, float(distance), arm, height),
            )

        def press(target, arm: str = '', force: float = 5.0, depth: float = 0.02):
            """Press a point [x, y, z] or the top of a located object with the closed fingertips:
            descend in a straight line until they feel `force` N (PREDICATE_SATISFIED) or go
            `depth` m below the point (COMPLETED), then rise. Returns the executions; the press
            itself is the second to last."""
            return api._logged(
                'press',
                {
                    'target': getattr(target, 'id', target),
                    'arm': arm,
                    'force': force,
                    'depth': depth,
                },
                lambda: api.contact.press(target, arm, float(force), float(depth), api._set_until),
            )

        def transfer(to_arm: str = '', along: float = 0.05, at=None):
            """Hand the held object to the other arm: the holder brings it to `at` (its TCP, m;
            default: the first point between the arms that both reach),
            the other arm grasps it `along` m past its centre (pick the object `along` m off its
            centre the other way first, e.g. pick(bar, along=-0.05)), then the holder opens and
            rises. Returns the receiver's Grip."""
            return api._logged(
                'transfer',
                {'to_arm': to_arm, 'along': along, 'at': at},
                lambda: api.contact.transfer(to_arm, float(along), at),
            )

        def scene():
            """Measure the scene again: `objects, held = scene()` gives every object located so
            far (a list of LocatedObject, by id, at its new position) and which object each arm
            holds ({'left': id or None, 'right': ...})."""
            return api._logged('scene', {}, api.measure_scene)

        def verify(claim: str):
            """Ask the verifier (a model shown fresh camera views) whether `claim` about the scene
            holds, e.g. verify('the red cube is inside the bowl'). Returns a Verdict: `.yes`,
            `.sentence` (its reason); true in an `if` when yes. Costs model tokens: use it for
            what the measurements cannot tell."""
            return api._logged('verify', {'claim': claim}, lambda: api.robot.verify(str(claim)))

        def release(arm: str = ''):
            """Open a gripper where it is and rise 8 cm."""
            return api._logged('release', {'arm': arm}, lambda: api.contact.release(arm))

        def finish(summary: str = ''):
            """End the episode: the task is done (or cannot be done). The harness then opens idle
            grippers, returns the arms home and reads the outcome."""
            api.log({'call': 'finish', 'args': {'summary': summary}})
            raise Finished(str(summary))

        return {
            f.__name__: f
            for f in (
                move_joints,
                move_eef,
                open_gripper,
                close_gripper,
                home,
                when,
                watch,
                clear_guards,
                run_controller,
                on,
                state,
                look,
                show,
                locate,
                pick,
                place,
                release,
                scene,
                verify,
                push,
                press,
                transfer,
                finish,
            )
        }


def api_reference(names: list[str] | None = None) -> str:
    """The program API as the model reads it: each function's signature and docstring, in
    the API's order; `names` selects the enabled ones (None = all). Unknown names: ValueError."""
    import inspect

    functions = ProgramApi(robot=None, stage=ProgramStage()).functions()
    unknown = sorted(set(names or ()) - set(functions))
    if unknown:
        raise ValueError(f'unknown API names {unknown}; the API has: {", ".join(functions)}')
    parts = []
    for name, fn in functions.items():
        if names is not None and name not in names:
            continue
        doc = inspect.cleandoc(fn.__doc__ or '')
        parts.append(
            f'{name}{inspect.signature(fn, eval_str=True)}\n'
            + '\n'.join(f'    {ln}' if ln else '' for ln in doc.splitlines())
        )
    return '\n\n'.join(parts)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Execution):
        return {
            'skill': value.skill,
            'arm': value.arm,
            'event': value.event,
            'detail': value.detail,
            'ticks': len(value.trace),
            'holding': value.holding,
        }
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)[:500]
