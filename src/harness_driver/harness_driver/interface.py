"""The interface ladder: how much one reply may do, and the cell a reply becomes.

- `programs` (the harness): a `<python>` block, a program of any length.
- `skills` (R1, as tool-calling agents work): a `<call>` block holding one statement that calls
  at most one API function (its arguments may be expressions over earlier results); no API call
  inside a loop, a condition or a function.
- `actions` (R0, direct control): an `<action>` block holding one JSON target for one arm, an
  end-effector pose or six joints and/or a gripper opening, which becomes one motion.

`<verify>` and `<finish>` are answered on every rung. Pure: the episode runs the cell.
"""

from __future__ import annotations

import ast
import json
import math

from harness_types.reply import FormatError, Reply

__all__ = ['INTERFACES', 'action_cell', 'call_cell', 'cell_of', 'format_help', 'skills_steps']

from harness_types.config import INTERFACES

BLOCK = {'programs': 'python', 'skills': 'call', 'actions': 'action'}
ARMS = ('left', 'right')
ACTION_KEYS = {'arm', 'position', 'quat', 'joints', 'gripper'}


def check_interface(interface: str) -> str:
    if interface not in INTERFACES:
        raise ValueError(f'interface must be one of {", ".join(INTERFACES)}, not {interface!r}')
    return interface


def format_help(interface: str) -> str:
    """What a reply of this rung looks like, for the format-error message."""
    block = {
        'programs': '<python>a program</python>',
        'skills': '<call>one statement calling one API function</call>',
        'actions': '<action>{"arm": "left", "position": [x, y, z], "gripper": 1.0}</action>',
    }[interface]
    return (
        f'Reply with an optional short thought, then exactly one block: {block}, '
        '<verify>a claim about the scene</verify> or <finish>a one-line summary</finish>.'
    )


def cell_of(interface: str, reply: Reply, api_names: list[str]) -> str:
    """The program a reply's block runs as; FormatError when the block is not this rung's."""
    wanted = BLOCK[interface]
    if reply.kind != wanted:
        raise FormatError(
            f"this episode's interface is {interface}: a <{reply.kind}> block is not allowed "
            f'here, write a <{wanted}> block'
        )
    if interface == 'skills':
        return call_cell(reply.body, api_names)
    if interface == 'actions':
        return action_cell(reply.body)
    return reply.body


def call_cell(body: str, api_names: list[str]) -> str:
    """The cell of one R1 call: the statement, then its result printed."""
    try:
        tree = ast.parse(body.strip())
    except SyntaxError as exc:
        raise FormatError(
            f'the <call> block is not Python: {exc.msg} (line {exc.lineno})'
        ) from None
    if len(tree.body) != 1:
        raise FormatError(
            f'the <call> block holds {len(tree.body)} statements; one statement per reply'
        )
    (statement,) = tree.body
    api = set(api_names)
    calls = [
        n
        for n in ast.walk(statement)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in api
    ]
    if len(calls) > 1:
        names = ', '.join(c.func.id for c in calls)
        raise FormatError(
            f'the <call> block calls {len(calls)} API functions ({names}); one per reply'
        )
    simple = isinstance(statement, ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign)
    if calls and not simple:
        raise FormatError(
            'an API call inside a loop, a condition or a definition runs many times or not at '
            'all: one plain call per reply'
        )
    text = ast.unparse(statement)
    if isinstance(statement, ast.Expr):
        return f'_ = {text}\nprint(repr(_))\n'
    targets = [t for t in getattr(statement, 'targets', [getattr(statement, 'target', None)]) if t]
    shown = ', '.join(ast.unparse(t) for t in targets)
    return f'{text}\nprint({shown!r}, "=", repr(({shown})))\n' if targets else f'{text}\n'


def skills_steps(cells: list[str], api_names: list[str]) -> list[str]:
    """The scripted R1 baseline derived from a reference program: its statements one per
    reply, loops over literal ranges and tuples unrolled (the loop variable assigned before
    each pass), prints left out (R1 prints each result). ValueError names a statement that
    cannot be one call per reply (an API call in a loop over runtime values, in a condition or
    in a function)."""
    api = set(api_names)
    steps: list[str] = []
    for cell in cells:
        for statement in ast.parse(cell).body:
            steps += _unrolled(statement, api)
    for step in steps:  # each must pass as a reply of the rung
        try:
            call_cell(step, api_names)
        except FormatError as exc:
            raise ValueError(f'not one call per reply: {step} ({exc})') from None
    return steps


def _calls_api(node: ast.AST, api: set[str]) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in api
        for n in ast.walk(node)
    )


def _unrolled(statement: ast.stmt, api: set[str]) -> list[str]:
    if (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id == 'print'
    ):
        return []
    if not _calls_api(statement, api) or isinstance(
        statement, ast.Expr | ast.Assign | ast.AugAssign | ast.AnnAssign
    ):
        return [ast.unparse(statement)]
    if isinstance(statement, ast.For) and not statement.orelse:
        try:
            values = ast.literal_eval(statement.iter)
        except ValueError:
            values = _literal_range(statement.iter)
        if values is not None:
            target = ast.unparse(statement.target)
            out = []
            for value in values:
                out.append(f'{target} = {value!r}')
                for inner in statement.body:
                    out += _unrolled(inner, api)
            return out
    raise ValueError(
        f'not one call per reply: {ast.unparse(statement).splitlines()[0]} (an API call in a '
        'loop over runtime values, a condition or a function)'
    )


def _literal_range(node: ast.expr) -> list[int] | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == 'range'
        and not node.keywords
    ):
        try:
            return list(range(*[ast.literal_eval(a) for a in node.args]))
        except (ValueError, TypeError):
            return None
    return None


def action_cell(body: str) -> str:
    """The cell of one R0 action: one motion of one arm (and its gripper)."""
    try:
        action = json.loads(body)
    except json.JSONDecodeError as exc:
        raise FormatError(f'the <action> block is not JSON: {exc.msg} at {exc.pos}') from None
    if not isinstance(action, dict):
        raise FormatError('the <action> block must be one JSON object')
    unknown = set(action) - ACTION_KEYS
    if unknown:
        raise FormatError(
            f'unknown keys {sorted(unknown)} in the action (allowed: {sorted(ACTION_KEYS)})'
        )
    arm = action.get('arm')
    if arm not in ARMS:
        raise FormatError(f'the action needs "arm": "left" or "right", not {arm!r}')
    if 'position' in action and 'joints' in action:
        raise FormatError('an action moves to a "position" or to "joints", not both')
    if 'quat' in action and 'position' not in action:
        raise FormatError('"quat" goes with a "position"')
    if not ({'position', 'joints', 'gripper'} & set(action)):
        raise FormatError('an action needs "position", "joints" or "gripper"')
    lines = []
    if 'position' in action:
        position = _numbers(action['position'], 3, 'position')
        quat = _numbers(action['quat'], 4, 'quat') if 'quat' in action else None
        if quat is not None and abs(math.hypot(*quat) - 1.0) > 0.01:
            raise FormatError(f'"quat" must be a unit quaternion [w, x, y, z], not {quat}')
        lines.append(f'_ = move_eef({position}, quat={quat}, arm={arm!r})')
    if 'joints' in action:
        joints = _numbers(action['joints'], 6, 'joints')
        lines.append(f'_ = move_joints({joints}, arm={arm!r})')
    if lines:
        lines.append('print(repr(_))')
    if 'gripper' in action:
        (opening,) = _numbers([action['gripper']], 1, 'gripper')
        if not 0.0 <= opening <= 1.0:
            raise FormatError(f'"gripper" is an opening from 0 (closed) to 1 (open), not {opening}')
        verb = 'close_gripper' if opening < 0.5 else 'open_gripper'
        lines.append(f'print(repr({verb}(arm={arm!r}, fraction={opening})))')
    return '\n'.join(lines) + '\n'


def _numbers(value, count: int, name: str) -> list[float]:
    if not isinstance(value, list) or len(value) != count:
        raise FormatError(f'"{name}" must be a list of {count} numbers')
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise FormatError(f'"{name}" must hold {count} finite numbers, not {value}')
        out.append(float(v))
    return out
