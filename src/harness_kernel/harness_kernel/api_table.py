"""The program API, declared once: for each name, its stub (the signature and the docstring the
model reads; each parameter's kind in its annotation), who handles it, whether it belongs to
the learned half, whether the agent operator offers it as an action (with which arguments:
the stub's, those of a kind an action can carry), and the verifier's claims about its
intended effect. Everything else is made from this table: the program's names
(`ProgramApi`), the prompt (`api_reference`), the kernel's dispatch, MCP's action schema
(`harness_operator.actions`), the verifier's effect claims and the docs' API list
(`markdown`).

This module is light on purpose: the sandboxed program process imports it, so it loads no
skill engine, no ROS message and no bench code (the effect claims import the verifier's
claims when they are asked for, in the trusted processes that ask).

Adding a name: a stub and an `ApiName` here, and its implementation where `handler` says:
`ContactSkills.<name>` ('contact'), `Kernel._<name>` ('kernel'), `LearnedHalf.<name>`
('learned'), `Foresight.<name>` ('foresight'), `ProgramApi.<name>` ('program'), or an entry
in harness_skills.skill_table ('skill_server'). Docstrings may name configured values as
`{control_hz:g}`; they are rendered from the configuration (harness_types.docs.render_doc).
"""

import functools
import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, get_args, get_origin

from harness_types.scene import LocatedObject

# Argument kinds, as annotations. An action (harness_operator.actions) can carry the kinds in
# OPERATOR_KINDS; the rest stay with programs. A trailing '?' means None is allowed too.
Obj = Annotated[LocatedObject, 'object']  # an object locate() gave
ObjOrNone = Annotated[LocatedObject | None, 'object?']
Target = Annotated[LocatedObject | Sequence[float], 'target']  # an object or [x, y, z]
TargetOrNone = Annotated[LocatedObject | Sequence[float] | None, 'target?']
Arm = Annotated[str, 'arm']  # 'left', 'right' or '' (the skill chooses)
Number = Annotated[float, 'number']
NumberOrNone = Annotated[float | None, 'number?']
Point3 = Annotated[Sequence[float], 'point3']
Point3OrNone = Annotated[Sequence[float] | None, 'point3?']
Vector2 = Annotated[Sequence[float], 'vector2']
QuatOrNone = Annotated[Sequence[float] | None, 'quat?']
Joints = Annotated[Sequence[float], 'joints']
Text = Annotated[str, 'text']  # sent on: a query, a name, a claim (no NUL, no lone surrogate)
Prose = Annotated[str, 'prose']  # shown to people only, cleaned where shown: any text
Function = Annotated[Callable, 'function']  # a function of obs: stays in the program
FunctionOrNone = Annotated[Callable | None, 'function?']
Region = Annotated[tuple | None, 'region?']
Names = Annotated[Sequence[str] | None, 'names?']
Image = Annotated[Any, 'image']  # an array, a CameraView or a camera name
ArrayOrNone = Annotated[Any, 'array?']  # numbers in rows
Anything = Annotated[Any, 'any']

OPERATOR_KINDS = frozenset(('object', 'target', 'arm', 'number', 'point3', 'vector2', 'quat'))
HANDLERS = ('skill_server', 'contact', 'kernel', 'learned', 'foresight', 'program')


@dataclass(frozen=True)
class Argument:
    """One parameter of a stub: its kind ('number', 'object', ...), whether None is allowed,
    and whether a call must give it."""

    name: str
    kind: str
    optional: bool
    required: bool
    default: Any = None


@dataclass(frozen=True)
class ApiName:
    """One name of the program API. `handler`: who does it (see HANDLERS). `learned`: enabled
    only with a policy catalogue. `operator`: offered to the agent operator as an action.
    `program_callbacks`: arguments that stay in the program (functions of obs) and the
    reactive stage slot each fills while the execution runs; `reactive`: the execution always
    calls the program's reactive stage. `effect(args, held)`: the verifier's claims about a
    call's intended effect (args by parameter name, objects by their query text, with the arm
    that moved; held: the label each arm is known to hold). `spoken(args)`: the action in
    words, for a policy (None: the task's instruction)."""

    stub: Callable
    handler: str
    learned: bool = False
    operator: bool = False
    program_callbacks: dict[str, str] = field(default_factory=dict)
    reactive: bool = False
    effect: Callable[[dict, dict], tuple] | None = None
    spoken: Callable[[dict], str] | None = None

    @property
    def name(self) -> str:
        return self.stub.__name__

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.stub) or ''

    def signature(self) -> inspect.Signature:
        """The stub's signature as the model reads it (without the kinds)."""
        return self._signature

    def kernel_signature(self) -> inspect.Signature:
        """The arguments the kernel is sent: the stub's, less the functions that stay in the
        program (`program_callbacks`)."""
        return self._kernel_signature

    def arguments(self) -> list[Argument]:
        return list(self._arguments.values())

    def argument(self, name: str) -> Argument:
        return self._arguments[name]

    def where(self, name: str) -> str:
        """How a message names argument `name`: the call for its first one (`pick()`), else
        the call and the argument (`pick(lift=)`)."""
        return f'{self.name}()' if name == next(iter(self._arguments)) else f'{self.name}({name}=)'

    # Derived once from the stub (every call of the name reads them).

    @functools.cached_property
    def _signature(self) -> inspect.Signature:
        return inspect.signature(self.stub).replace(
            parameters=[
                p.replace(annotation=inspect.Parameter.empty)
                for p in inspect.signature(self.stub).parameters.values()
            ],
            return_annotation=inspect.Signature.empty,
        )

    @functools.cached_property
    def _kernel_signature(self) -> inspect.Signature:
        return self._signature.replace(
            parameters=[
                p
                for p in self._signature.parameters.values()
                if p.name not in self.program_callbacks
            ]
        )

    @functools.cached_property
    def _arguments(self) -> dict[str, Argument]:
        out = {}
        for p in inspect.signature(self.stub).parameters.values():
            kind = _kind(p.annotation, f'{self.name}({p.name})')
            required = p.default is inspect.Parameter.empty
            out[p.name] = Argument(
                p.name, kind.rstrip('?'), kind.endswith('?'), required,
                None if required else p.default,
            )  # fmt: skip
        return out

    def operator_arguments(self) -> list[Argument]:
        """The arguments an action carries (kinds an action can express)."""
        return [a for a in self.arguments() if a.kind in OPERATOR_KINDS]


def _kind(annotation: Any, where: str) -> str:
    if get_origin(annotation) is not Annotated:
        raise TypeError(f'{where}: the stub must annotate the parameter with a kind')
    return get_args(annotation)[1]


# The stubs --------------------------------------------------------------------------------------


def move_joints(positions: Joints, arm: Arm = '', speed: Number = 0.0, max_seconds: Number = 0.0):
    """Move one arm's six joints to `positions` (rad) as one bounded execution.

    arm: 'left', 'right', or '' for the arm whose joints are nearest. speed: rad/s of
    the fastest joint (default 1.0). max_seconds: simulated-time bound (default: the
    planned duration plus margin). Returns an Execution; BLOCKED when the arm settles
    more than 0.05 rad short (something is in the way).
    """


def move_eef(
    position: Point3,
    quat: QuatOrNone = None,
    arm: Arm = '',
    speed: Number = 0.0,
    max_seconds: Number = 0.0,
    region: Region = None,
):
    """Move a TCP to `position` [x, y, z] (m, world frame) through free space.

    quat: optional orientation [w, x, y, z]; without it only the position is solved.
    arm: 'left', 'right' or '' for the arm whose TCP is nearer. The path avoids the
    table and objects (the worker plans one when a straight joint move would collide).
    region: optional ([xmin, ymin, zmin], [xmax, ymax, zmax]); link6 of the arm (the
    wrist, behind the TCP) leaving it ends the execution with REGION_EXIT. An unreachable
    target gives SKILL_ERROR.
    """


def open_gripper(arm: Arm = '', fraction: Number = 1.0):
    """Open a gripper to `fraction` (1 = fully open, 88 mm). arm '' opens both."""


def close_gripper(arm: Arm = '', fraction: Number = 0.0):
    """Close a gripper (to `fraction`, default 0: squeeze). The result's `.holding` says
    whether the fingers stopped on something."""


def home(arm: Arm = ''):
    """Return an arm ('' = both) to its start pose (joints 0) on a collision-free path."""


def when(predicate: Function, action: Text = 'stop', name: Anything = None):
    """Add a guard: during every later execution, `predicate(obs)` runs each tick
    ({control_hz:g} Hz, {reactive_budget_ms:g} ms budget, no I/O or sleeping). When it
    returns True the execution ends: action 'stop' (arm stops), 'hold' (keeps its last
    command), 'open_gripper', or an event name in CAPITALS that the execution then ends
    with. obs has .arms['left'] (.tcp_position, .joints, .gripper, .grip_force), .left,
    .right, .step, .time and .signals(). Returns the guard name."""


def watch(signal: Text, low: Number, high: Number, action: Text = 'stop', name: Anything = None):
    """Add a watch: later executions end when the named signal leaves [low, high].
    Signals: <arm>_joint1..6, <arm>_tcp_x|y|z, <arm>_link6_x|y|z, <arm>_gripper,
    <arm>_grip_force (N), <arm>_contact (0/1), with <arm> left or right."""


def clear_guards(names: Names = None):
    """Remove guards and watches by name (all when `names` is None); returns the names."""


def run_controller(
    fn: Function,
    until: FunctionOrNone = None,
    max_seconds: Number = 5.0,
    region: Region = None,
    hz: Number = 25.0,
    cameras: Names = (),
    camera_hz: Number = 0.0,
):
    """Run `fn(obs)` hz times a second of simulated time on average, exactly (on the control
    ticks where each 1/hz s falls; hz at most {control_hz:g}, the tick rate); it returns
    targets: {'left': 6 joints}, {'left_eef': [x, y, z] or [x, y, z, qw, qx, qy, qz]} (solved
    by IK), {'left_gripper': fraction}, same for right. Ends when `until(obs)` holds
    (PREDICATE_SATISFIED, checked every tick), a guard fires, link6 of an arm it commands
    (the wrist, behind the TCP) leaves `region` (REGION_EXIT), an arm presses the table
    or an object it does not hold harder than {max_contact_force_n:g} N (FORCE_LIMIT), or
    max_seconds pass (TIMEOUT). cameras:
    names whose views arrive in obs.images (by name) every 1/camera_hz s (0: with every
    call), each a CameraView as look() gives (.rgb, .depth arrays, .fx .fy .cx .cy,
    .position, .rotation). Each call of fn and until has a {reactive_budget_ms:g} ms budget;
    every command is shielded."""


def on(event: Text, handler: FunctionOrNone):
    """Register `handler(execution)` for a non-nominal event name (or '*' for any). It
    runs when a skill ends with that event; return True to absorb the event and let the
    program go on, anything else escalates it to the model. `handler` None removes it."""


def state():
    """The measured robot state: .left/.right (.joints, .gripper, .tcp (= .tcp_position),
    .tcp_quat, .grip_force), .arms, .step and .time (s of episode time)."""


def look(camera: Text = 'cam_head'):
    """A fresh view of a camera (cam_head, cam_left_wrist or cam_right_wrist; or
    task_picture, the picture of a task that shows its target instead of naming it): a
    CameraView with .rgb (H x W x 3 uint8 array), .depth (H x W float32, m along the optical
    axis), .fx, .fy, .cx, .cy (pixels), .position and .rotation (the optical frame in the
    world: z forward, x right, y down), .project(points) and .back_project(mask)."""


def show(image_or_camera: Image = 'cam_head', caption: Prose = ''):
    """Attach an image (an array, a CameraView, or a camera name for a fresh view) to this
    turn's report for the model."""


def locate(query: Text = ''):
    """Find objects with the cameras: a list of LocatedObject (.id, .label e.g. 'red
    cube': colour then shape, .position [x, y, z] in m: x, y the centre of its top face (a
    bowl: of its rim; a held object or a flat zone: of all its points), z halfway between
    its top and bottom, .size [x, y, z] extent, .top height of its top surface, .cameras
    that see it). Every word of
    `query` must name the object's colour ({colour_words}) or shape ({shape_words});
    '' = all; 'left',
    'right', 'biggest' or 'smallest' keep only the one extreme match. [] when nothing
    matches. Held and stacked objects are measured from their own points. An object keeps
    its id for the whole episode."""


def pick(
    obj: Obj,
    arm: Arm = '',
    approach: NumberOrNone = None,
    grasp_height: NumberOrNone = None,
    lift: Number = 0.12,
    along: Number = 0.0,
    toward: TargetOrNone = None,
):
    """Grasp a located object from above and lift it: open, move above (approach m over
    the grasp), descend to grasp_height (default: just below the object's centre), close,
    lift by `lift` m. along: grasp this many m from the centre along world y (to hold one
    end of a long object). toward: where the object goes next (a located object to put it
    on or into, or [x, y, z] for its centre): the tool is tilted so that it also reaches
    there, and place() can keep the object as it was picked (upright). Returns a Grip
    (.arm, .object_id). Nothing between the fingers after closing, or an object out of
    reach, ends with SKILL_ERROR. arm '' = the nearer arm."""


def place(
    position: Point3OrNone = None,
    onto: ObjOrNone = None,
    into: ObjOrNone = None,
    arm: Arm = '',
    clearance: Number = 0.005,
    approach: Number = 0.08,
):
    """Put down what an arm holds: at `position` [x, y, z] (the object's centre), `onto`
    a located object (resting `clearance` m above its top), or `into` a located container;
    come down from `approach` m above, open the gripper and rise 8 cm. arm '' = the arm
    that holds something."""


def release(arm: Arm = ''):
    """Open a gripper where it is and rise 8 cm."""


def scene():
    """Measure the scene again: `objects, held = scene()` gives every object located so
    far (a list of LocatedObject, by id, at its new position) and which object each arm
    holds ({'left': id or None, 'right': ...})."""


def verify(claim: Text):
    """Ask the verifier (a model shown fresh camera views) whether `claim` about the scene
    holds, e.g. verify('the red cube is inside the bowl'). Returns a ClaimAnswer: `.yes`,
    `.sentence` (its reason), `.answered`; true in an `if` when yes. Costs model tokens and
    one model call of the episode's budget: use it for what the measurements cannot tell."""


def push(
    obj: Obj, direction: Vector2, distance: Number, arm: Arm = '', height: NumberOrNone = None
):
    """Push a located object along `direction` [dx, dy] (table plane) by `distance` m
    (at most 0.3) without grasping: the closed fingertips start 3 cm behind it, low
    (`height` m above the table, default from its size), and move in a straight line,
    then rise. Returns the executions."""


def press(target: Target, arm: Arm = '', force: Number = 5.0, depth: Number = 0.02):
    """Press a point [x, y, z] or the top of a located object with the closed fingertips:
    descend in a straight line until they feel `force` N (PREDICATE_SATISFIED) or go
    `depth` m below the point (COMPLETED), then rise. Returns the executions; the press
    itself is the second to last."""


def transfer(to_arm: Arm = '', along: Number = 0.05, at: Point3OrNone = None):
    """Hand the held object to the other arm: the holder brings it to `at` (its TCP, m;
    default: the first point between the arms that both reach), the other arm grasps it
    `along` m past its centre (pick the object `along` m off its centre the other way
    first, e.g. pick(bar, along=-0.05)), then the holder opens and rises. Returns the
    receiver's Grip."""


def list_policies():
    """The policies this station has, one line each: what it is, the task kinds it
    learned and which of them it usually finishes, its action rate and cameras."""


def start(strategy: Text, kind: Text, instruction: Text = ''):
    """Choose how the task is solved, once, before anything moves (with policies enabled
    every execution before start() ends with SKILL_ERROR). strategy 'A': a policy that
    learned `kind` runs the whole task from the untouched start pose (run_policy) while
    you supervise (choose it when the policy usually finishes that kind); 'C': a policy
    that learned `kind` first, then your programs finish what it leaves; 'B': programs
    only, run_policy is refused (tasks no policy learned, e.g. picking by a number or a
    label). kind: the task kind in the catalogue's words (see list_policies()).
    instruction: the task's instruction; given, only a policy that learned it is chosen
    (a policy trained on listed instructions learned no other). Returns a sentence; for A
    and C it names the policy to run. The same choice again changes nothing; another one
    raises RuntimeError."""


def run_policy(
    name: Text,
    instruction: Text,
    max_seconds: Number = 60.0,
    until: FunctionOrNone = None,
    region: Region = None,
):
    """Let policy `name` (one list_policies() names) act, as one bounded execution: it is
    sent its cameras, the joint state and `instruction`, and answers chunks of joint
    targets, each action shielded, at its own rate.
    With policies enabled, call start(strategy, kind) first. Ends COMPLETED when the policy
    says it is done or the arms stall (still for a few seconds once they moved), TIMEOUT
    after max_seconds of simulated time, PREDICATE_SATISFIED when `until(obs)` holds
    (checked every tick), REGION_EXIT when link6 of an arm leaves `region` ([xmin, ymin,
    zmin], [xmax, ymax, zmax]), SHIELD_REJECTED, FORCE_LIMIT, GUARD_TRIGGERED, EPISODE_ENDED
    (the task succeeded or the step limit passed), or SKILL_ERROR when the policy cannot be
    reached or
    breaks off. The result's .chunks and .actions count what the policy sent and what ran."""


def predict_future(
    policy: Text = '', actions: ArrayOrNone = None, seconds: Number = 2.0, instruction: Text = ''
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


def finish(summary: Prose = ''):
    """End the episode: the task is done (or cannot be done). The harness then opens idle
    grippers, returns the arms home and reads the outcome."""


# The verifier's claims about an effect, and an action in words ------------------------------
# The claims are imported when asked for: the program process never asks (see the top).


def _arm(a: dict) -> str:
    return str(a.get('arm') or '')


def _pick_effect(a: dict, held: dict) -> tuple:
    from harness_bench.verifier import Holding, Raised

    return (Holding(_arm(a), 0.0), Raised(str(a['obj']), 0.02))


def _place_effect(a: dict, held: dict) -> tuple:
    from harness_bench.verifier import Inside, Near, On, Released

    arm = _arm(a)
    what = held.get(arm) if arm else next(iter(held.values()), None)
    claims: list = [Released(arm)]
    if what and a.get('into'):
        claims.append(Inside(what, str(a['into'])))
    elif what and a.get('onto'):
        claims.append(On(what, str(a['onto'])))
    elif what and a.get('position') is not None:
        claims.append(Near(what, tuple(a['position'])))
    return tuple(claims)


def _push_effect(a: dict, held: dict) -> tuple:
    from harness_bench.verifier import Moved

    return (Moved(str(a['obj']), tuple(a['direction']), float(a['distance'])),)


def _press_effect(a: dict, held: dict) -> tuple:
    from harness_bench.verifier import Turned

    # the station's buttons latch green (press_button); a point names no object to watch
    return (Turned(a['target'], 'green'),) if isinstance(a['target'], str) else ()


def _transfer_effect(a: dict, held: dict) -> tuple:
    from harness_bench.verifier import Holding, Released

    giver = next(iter(held), '')
    to_arm = str(a.get('to_arm') or ('right' if giver == 'left' else 'left'))
    return (Holding(to_arm), *((Released(giver),) if giver else ()))


def _home_effect(a: dict, held: dict) -> tuple:
    from harness_bench.verifier import AtHome

    return (AtHome(),)


def _move_eef_effect(a: dict, held: dict) -> tuple:
    from harness_bench.verifier import TcpAt

    return (TcpAt(_arm(a), tuple(a['position'])),)


def _named(ref) -> str:
    """An object argument of an action in words: its query, or the label an id stood for."""
    return ref['label'] if isinstance(ref, dict) else ref


def _place_spoken(a: dict) -> str:
    if 'into' in a:
        return f'put what you hold into the {_named(a["into"])}'
    if 'onto' in a:
        return f'put what you hold onto the {_named(a["onto"])}'
    return f'put what you hold down at {a["position"]}'


def _arm_words(a: dict) -> str:
    """'the left arm' / 'the right arm', or 'an arm' where the action leaves it open."""
    return f'the {a["arm"]} arm' if a.get('arm') else 'an arm'


def _move_eef_spoken(a: dict) -> str:
    return f'move {_arm_words(a)} to {a["position"]}'


def _transfer_spoken(a: dict) -> str:
    to = f'the {a["to_arm"]} arm' if a.get('to_arm') else 'the other arm'
    return f'hand what you hold over to {to}'


def _press_spoken(a: dict) -> str:
    target = a['target']
    return f'press {target}' if isinstance(target, list) else f'press the {_named(target)}'


# The table, in the order the model reads it --------------------------------------------------

API: dict[str, ApiName] = {
    e.name: e
    for e in (
        ApiName(move_joints, 'skill_server'),
        ApiName(
            move_eef,
            'skill_server',
            operator=True,
            effect=_move_eef_effect,
            spoken=_move_eef_spoken,
        ),
        ApiName(open_gripper, 'skill_server'),
        ApiName(close_gripper, 'skill_server'),
        ApiName(
            home,
            'skill_server',
            operator=True,
            effect=_home_effect,
            spoken=lambda a: 'go back home',
        ),
        ApiName(when, 'program'),
        ApiName(watch, 'program'),
        ApiName(clear_guards, 'program'),
        ApiName(
            run_controller,
            'skill_server',
            program_callbacks={'fn': 'controller', 'until': 'until'},
            reactive=True,
        ),
        ApiName(on, 'program'),
        ApiName(state, 'kernel'),
        ApiName(look, 'kernel'),
        ApiName(show, 'kernel'),
        ApiName(locate, 'kernel'),
        ApiName(
            pick,
            'contact',
            operator=True,
            effect=_pick_effect,
            spoken=lambda a: f'pick up the {_named(a["obj"])}',
        ),
        ApiName(place, 'contact', operator=True, effect=_place_effect, spoken=_place_spoken),
        ApiName(
            release,
            'contact',
            operator=True,
            effect=_place_effect,
            spoken=lambda a: f'let go of what {_arm_words(a)} holds',
        ),
        ApiName(scene, 'kernel'),
        ApiName(verify, 'kernel'),
        ApiName(
            push,
            'contact',
            operator=True,
            effect=_push_effect,
            spoken=lambda a: (
                f'push the {_named(a["obj"])} {a["distance"]:g} m along {a["direction"]}'
            ),
        ),
        ApiName(press, 'contact', operator=True, effect=_press_effect, spoken=_press_spoken),
        ApiName(
            transfer,
            'contact',
            operator=True,
            effect=_transfer_effect,
            spoken=_transfer_spoken,
        ),
        ApiName(list_policies, 'learned', learned=True),
        ApiName(start, 'learned', learned=True),
        ApiName(run_policy, 'skill_server', learned=True, program_callbacks={'until': 'until'}),
        ApiName(predict_future, 'foresight', learned=True),
        ApiName(finish, 'kernel'),
    )
}
API_NAMES = tuple(API)
# The learned half: enabled only with a policy catalogue (kernel.policies).
LEARNED_NAMES = tuple(n for n, e in API.items() if e.learned)
OPERATOR_NAMES = tuple(n for n, e in API.items() if e.operator)


def enabled_names(api_names: list[str] | None, policies: bool) -> list[str]:
    """The API names an episode enables: the configured ones (None = all), without the
    learned half unless policies are enabled."""
    names = list(API_NAMES) if api_names is None else list(api_names)
    return [n for n in names if policies or n not in LEARNED_NAMES]


def effect_claims(name: str, args: dict, held: dict[str, str]) -> tuple:
    """The verifier's claims about the intended effect of one call of `name` (none for a name
    that declares no effect)."""
    effect = API[name].effect
    return effect(args, held) if effect is not None else ()


HANDLER_WORDS = {
    'skill_server': 'skill server',
    'contact': 'kernel (contact skills)',
    'kernel': 'kernel',
    'learned': 'kernel (learned half)',
    'foresight': 'kernel (world model)',
    'program': 'program process',
}


def markdown() -> str:
    """The docs' API list: each name, its signature, who handles it, and what it is for (the
    first sentence of its docstring, configured values by their names)."""
    lines = ['| name | handled by | what it does |', '|---|---|---|']
    for e in API.values():
        text = ' '.join(e.doc.split('\n\n')[0].split())
        first = re.split(r'(?<!e\.g)(?<!i\.e)\.\s+', text)[0].rstrip('.')
        first = re.sub(r'\{([a-z_]+)(:[^{}]*)?\}', r'<\1>', first)
        tags = [HANDLER_WORDS[e.handler]]
        if e.learned:
            tags.append('with policies')
        if e.operator:
            tags.append('an MCP action')
        signature = str(e.signature()).replace('|', '\\|')
        lines.append(f'| `{e.name}{signature}` | {"; ".join(tags)} | {first}. |')
    return '\n'.join(lines)
