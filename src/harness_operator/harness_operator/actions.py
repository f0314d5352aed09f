"""An action: one unit step of a task, as the agent operator dispatches it. Either a skill call
with its arguments (objects named by a locate() query or an id), a short program cell, or a
policy run ({"policy": NAME, "instruction": TEXT}).
`parse_action` checks a JSON action against the skills' argument table and says what is wrong;
`cell_source` writes the program cell the kernel runs for it (only program-API calls, with
the arguments as Python literals). Pure."""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass, field

from harness_kernel.api_table import API, OPERATOR_NAMES
from harness_kernel.call_arguments import NOT_NEGATIVE
from harness_types.config import shown

MAX_PROGRAM_CHARS = 20_000

# The skills an action may call and the arguments it may give them, from the API table: each
# argument's (kind, required), kinds as the table's ('object': a query or an id string,
# 'target': an object or a point; a trailing '?': null allowed).
SKILL_ARGS: dict[str, dict[str, tuple[str, bool]]] = {
    name: {
        a.name: (a.kind + ('?' if a.optional else ''), a.required)
        for a in API[name].operator_arguments()
    }
    for name in OPERATOR_NAMES
}
# What each argument is when an action leaves it out (the stub's default): an action that
# gives it is the same action (a retry is one however it is spelt).
SKILL_DEFAULTS: dict[str, dict] = {
    name: {a.name: a.default for a in API[name].operator_arguments() if not a.required}
    for name in OPERATOR_NAMES
}
SKILLS = tuple(SKILL_ARGS)
OBJECT_ARGS = frozenset(
    n
    for table in SKILL_ARGS.values()
    for n, (kind, _) in table.items()
    if kind.rstrip('?') in ('object', 'target')
)


class ActionError(ValueError):
    """The action is malformed; the message says what is wrong and what is expected."""


@dataclass(frozen=True)
class Action:
    """`skill` (one of SKILLS, 'program' or 'policy') and its checked `args` (a policy's:
    policy and instruction); `code` for a program."""

    skill: str
    args: dict = field(default_factory=dict)
    code: str = ''

    def as_json(self) -> dict:
        """The action's JSON form (what parse_action reads)."""
        if self.skill == 'program':
            return {'program': self.code}
        if self.skill == 'policy':
            return dict(self.args)
        return {'skill': self.skill, **self.args}

    def canonical(self) -> str:
        """The action as one JSON text with sorted keys: equal actions, equal texts."""
        return json.dumps(self.as_json(), sort_keys=True)

    def spoken(self, task_instruction: str) -> str:
        """The action as an instruction for a policy (the API table's words for the skill; a
        program, or a skill without words: the task's instruction)."""
        if self.skill == 'policy':
            return self.args['instruction']
        words = API[self.skill].spoken if self.skill in API else None
        return words(self.args) if words is not None else task_instruction

    def describe(self) -> str:
        """The action in one short line, for messages (a refusal's reason)."""
        if self.skill == 'program':
            first = next((ln for ln in self.code.splitlines() if ln.strip()), '')
            return f'program: {first[:80]}'
        parts = [f'{k}={v!r}' for k, v in self.args.items()]
        return f'{self.skill}({", ".join(parts)})'


def _number(name: str, value) -> float:
    number = math.nan
    if not isinstance(value, bool) and isinstance(value, int | float):
        with contextlib.suppress(OverflowError):  # an int past a float's range
            number = float(value)
    if not math.isfinite(number):
        raise ActionError(f'{name} must be a finite number, not {shown(value)}')
    return number


def _vector(name: str, value, n: int) -> list[float]:
    if not isinstance(value, list | tuple) or len(value) != n:
        raise ActionError(f'{name} must be a list of {n} numbers, not {shown(value)}')
    return [_number(f'{name}[{i}]', v) for i, v in enumerate(value)]


def _checked(skill: str, name: str, kind: str, value):
    where = f'{skill}.{name}'
    if kind.endswith('?') and value is None:
        return None
    kind = kind.rstrip('?')
    if kind == 'object':
        if isinstance(value, dict) and set(value) == {'label', 'near'}:
            # an id from observe, resolved by the session: the label nearest a position
            label = _checked(skill, name, 'object', value['label'])
            return {'label': label, 'near': _vector(f'{where}.near', value['near'], 3)}
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            raise ActionError(
                f'{where} must name an object: a locate() query such as "red cube" or an id '
                f'from observe, not {shown(value)}'
            )
        return ' '.join(value.split())  # (locate() reads the words)
    if kind == 'arm':
        if value not in ('', 'left', 'right'):
            raise ActionError(f"{where} must be 'left', 'right' or '' (either), not {shown(value)}")
        return value
    if kind == 'number':
        return _number(where, value)
    if kind == 'point3':
        return _vector(where, value, 3)
    if kind == 'vector2':
        return _vector(where, value, 2)
    if kind == 'quat':
        return _vector(where, value, 4)
    if kind == 'target':
        if isinstance(value, str):
            return _checked(skill, name, 'object', value)
        return _vector(where, value, 3)
    raise AssertionError(kind)


def _number_schema() -> dict:
    return {'type': 'number'}


def _vector_schema(n: int) -> dict:
    return {'type': 'array', 'items': {'type': 'number'}, 'minItems': n, 'maxItems': n}


_OBJECT_SCHEMA = {
    'anyOf': [
        {'type': 'string', 'minLength': 1, 'maxLength': 200},
        {
            'type': 'object',
            'properties': {'label': {'type': 'string'}, 'near': _vector_schema(3)},
            'required': ['label', 'near'],
            'additionalProperties': False,
        },
    ],
    'description': 'a locate() query such as "red cube", or an id from observe',
}
_KIND_SCHEMAS = {
    'object': _OBJECT_SCHEMA,
    'arm': {'enum': ['left', 'right', ''], 'description': "'' = either"},
    'number': _number_schema(),
    'point3': _vector_schema(3),
    'vector2': _vector_schema(2),
    'quat': _vector_schema(4),
    'target': {'anyOf': [_OBJECT_SCHEMA, _vector_schema(3)]},
}


def action_schema(policies: bool = True) -> dict:
    """The JSON Schema of an action, one alternative per kind (each skill with its arguments,
    a program, and with `policies` a policy), made from SKILL_ARGS: what an MCP client
    validates before calling. parse_action checks the same and more (ranges, place's one
    target)."""
    kinds = []
    for skill, table in SKILL_ARGS.items():
        properties = {'skill': {'const': skill}}
        for name, (kind, _required) in table.items():
            schema = dict(_KIND_SCHEMAS[kind.rstrip('?')])
            properties[name] = (
                {'anyOf': [schema, {'type': 'null'}]} if kind.endswith('?') else schema
            )
        required = ['skill', *(n for n, (_, needed) in table.items() if needed)]
        kinds.append(
            {
                'type': 'object',
                'title': skill,
                'properties': properties,
                'required': required,
                'additionalProperties': False,
            }
        )
    kinds.append(
        {
            'type': 'object',
            'title': 'program',
            'properties': {
                'program': {'type': 'string', 'minLength': 1, 'maxLength': MAX_PROGRAM_CHARS}
            },
            'required': ['program'],
            'additionalProperties': False,
        }
    )
    if not policies:
        return {'oneOf': kinds}
    kinds.append(
        {
            'type': 'object',
            'title': 'policy',
            'properties': {
                'policy': {'type': 'string', 'minLength': 1},
                'instruction': {'type': 'string', 'minLength': 1, 'maxLength': 2000},
            },
            'required': ['policy', 'instruction'],
            'additionalProperties': False,
        }
    )
    return {'oneOf': kinds}


def parse_action(action) -> Action:
    """An Action from its JSON form: {"skill": "pick", "obj": "red cube", ...} or
    {"program": "<python>"}. ActionError says what is wrong."""
    if isinstance(action, str):
        try:
            action = json.loads(action)
        except ValueError as exc:
            raise ActionError(f'the action is not JSON: {exc}') from None
    if not isinstance(action, dict):
        raise ActionError(
            'an action is an object: {"skill": "pick", "obj": "red cube"} or '
            '{"program": "<python cell>"}'
        )
    if 'policy' in action:
        extra = set(action) - {'policy', 'instruction'}
        if extra:
            raise ActionError(
                f'a policy action has "policy" and "instruction", not {sorted(extra)}'
            )
        name, text = action['policy'], action.get('instruction', '')
        if not isinstance(name, str) or not name.strip():
            raise ActionError('"policy" must name a policy list_policies gives')
        if not isinstance(text, str) or not text.strip() or len(text) > 2000:
            raise ActionError('"instruction" must be a sentence for the policy (1-2000 characters)')
        return Action('policy', {'policy': name.strip(), 'instruction': text.strip()})
    if 'program' in action:
        extra = set(action) - {'program'}
        if extra:
            raise ActionError(f'a program action has only "program", not {sorted(extra)}')
        code = action['program']
        if not isinstance(code, str) or not code.strip():
            raise ActionError('"program" must be the text of a Python cell')
        if len(code) > MAX_PROGRAM_CHARS:
            raise ActionError(f'a program action is at most {MAX_PROGRAM_CHARS} characters')
        try:
            compile(code, '<action>', 'exec')
        except SyntaxError as exc:
            raise ActionError(
                f'the program does not compile: line {exc.lineno}: {exc.msg}'
            ) from None
        return Action('program', code=code)
    skill = action.get('skill')
    if not isinstance(skill, str) or skill not in SKILL_ARGS:
        raise ActionError(
            f'unknown skill {shown(skill)}; an action\'s "skill" is one of {", ".join(SKILLS)} '
            '(or give {"program": ...})'
        )
    table = SKILL_ARGS[skill]
    given = {k: v for k, v in action.items() if k != 'skill'}
    if 'object' in given and 'obj' in table and 'obj' not in given:
        # the object's argument was called "object" before it took the program API's name
        # (journals written then are resumed with it)
        given['obj'] = given.pop('object')
    # null for an argument whose default is null is the argument left out (place's targets)
    given = {
        k: v
        for k, v in given.items()
        if not (v is None and k in table and table[k][0].endswith('?'))
    }
    unknown = sorted(set(given) - set(table))
    if unknown:
        raise ActionError(
            f'{skill} has no argument {shown(unknown[0])}; it takes {", ".join(table)}'
        )
    missing = [n for n, (_, required) in table.items() if required and n not in given]
    if missing:
        raise ActionError(f'{skill} needs {", ".join(missing)}')
    args = {n: _checked(skill, n, table[n][0], v) for n, v in given.items()}
    if skill == 'place':
        targets = [n for n in ('into', 'onto', 'position') if n in args]
        if len(targets) != 1:
            raise ActionError('place needs exactly one of into, onto or position')
    for name in NOT_NEGATIVE & set(args):
        if isinstance(args[name], float) and args[name] < 0:
            raise ActionError(f'{skill}.{name} must be 0 (the default) or more, not {args[name]:g}')
    if skill == 'push' and not 0 < args['distance'] <= 0.3:
        raise ActionError(f'push.distance must be within (0, 0.3] m, not {args["distance"]}')
    defaults = SKILL_DEFAULTS[skill]
    args = {n: v for n, v in args.items() if n not in defaults or v != defaults[n]}
    return Action(skill, dict(sorted(args.items())))


def same_action(recorded: dict, action: Action) -> bool:
    """Whether a journal's `recorded` action (as it was given then) is `action`, each as
    parse_action reads it (defaults left out, a query's spaces as locate() reads them)."""
    try:
        return parse_action(recorded).as_json() == action.as_json()
    except ActionError:
        return recorded == action.as_json()


# The cell that runs an action: objects are found again by query or id each time (an id from
# observe() is the program's own if the program located it; otherwise the query decides).
_PRELUDE = """\
def _object(ref):
    if isinstance(ref, dict):  # a label and where the station's verifier saw it
        found = locate(ref['label'])
        if not found:
            raise LookupError(f'nothing in view matches {ref["label"]!r}')
        near = ref['near']
        return min(found, key=lambda o: sum((a - b) ** 2 for a, b in zip(o.position, near)))
    objects, _ = scene()
    for o in objects:
        if o.id == ref:
            return o
    found = locate(ref)
    if not found:
        raise LookupError(f'nothing in view matches {ref!r}')
    return found[0]
"""


def cell_source(action: Action) -> str:
    """The program cell for `action`: the program itself, or one API call whose object
    arguments are found first (LookupError in the cell when nothing matches)."""
    if action.skill == 'program':
        return action.code
    if action.skill == 'policy':
        return policy_source(action.args['policy'], action.args['instruction'])
    call = []
    for name, value in action.args.items():
        if name in OBJECT_ARGS and isinstance(value, str | dict):
            call.append(f'{name}=_object({value!r})')
        else:
            call.append(f'{name}={value!r}')
    return f'{_PRELUDE}_result = {action.skill}({", ".join(call)})\nprint(repr(_result))\n'


def policy_source(policy: str, instruction: str) -> str:
    """The cell that lets `policy` act on `instruction` (one bounded execution)."""
    return f'_result = run_policy({policy!r}, {instruction!r})\nprint(repr(_result))\n'


def query_of(ref) -> str:
    """An object argument as the verifier's query: its text, or the label an id stood for."""
    return ref['label'] if isinstance(ref, dict) else str(ref or '')
