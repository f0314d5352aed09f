"""The text the model reads at each decision point."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from harness_types.cell import CellResult
from harness_types.execution import Execution
from harness_types.robot_state import RobotState
from harness_types.scene import ClaimAnswer
from harness_types.tf_tree import TfTree

LAST_EXECUTIONS = 8
EVENT_TICKS = 3  # ticks of an escalation's trace the turn report shows, up to its event


def _v(values, digits: int = 3) -> str:
    return '[' + ', '.join(f'{float(v):.{digits}f}' for v in values) + ']'


def robot_text(robot: RobotState) -> str:
    lines = [f'Robot (step {robot.step}, {robot.time:.2f} s of episode time):']
    for arm in (robot.left, robot.right):
        lines.append(
            f'  {arm.name}: tcp {_v(arm.tcp_position)} m, gripper {arm.gripper:.2f} open, grip '
            f'force {arm.grip_force:.1f} N, joints {_v(arm.joints, 2)} rad'
        )
    return '\n'.join(lines)


TASK_PREFIX = 'Task: '  # the start message's first line: the instruction


def instruction_in(messages: list[dict]) -> str:
    """The instruction the start message of `messages` gives ('' when there is none)."""
    content = messages[0]['content'] if messages else ''
    texts = (
        [content]
        if isinstance(content, str)
        else [b.get('text', '') for b in content if b.get('type') == 'text']
    )
    for text in texts:
        if text.startswith(TASK_PREFIX):
            return text[len(TASK_PREFIX) :].split('\n', 1)[0]
    return ''


def start_text(
    instruction: str, description: str, robot: RobotState, step_limit: int, calls: int
) -> str:
    return '\n'.join(
        [
            f'{TASK_PREFIX}{instruction}',
            f'Description: {description}',
            robot_text(robot),
            f'Env steps: {robot.step} of {step_limit} used.',
            f'Model calls left: {calls}.',
            'The images show the cameras now. Write the first program.',
        ]
    )


PROGRAM_QUOTE = '| '  # every line of program text in a report starts with this


def quoted(text: str) -> list[str]:
    """Text that came from the program, one report line per line of it, each quoted: nothing
    the program prints can pass for a line of the report (a status, a kernel note)."""
    return [PROGRAM_QUOTE + line for line in text.rstrip().splitlines()]


DETAIL_CHARS = 400  # of one execution's detail in a report (guard details are the program's)


def inline(text: str, limit: int = DETAIL_CHARS) -> str:
    """Text on one report line: its line breaks become spaces, clipped to `limit` characters."""
    text = ' '.join(str(text).splitlines())
    return text if len(text) <= limit else text[:limit] + ' [clipped]'


class TcpOf:
    """Each arm's TCP position (m, world) at a measured 14-vector: the URDF's `<arm>_tcp`
    links placed by its joints (harness_types.tf_tree), as rviz and robot_state_publisher
    place them."""

    def __init__(self, urdf: str) -> None:
        self.tree = TfTree(urdf)

    def __call__(self, measured) -> dict[str, np.ndarray]:
        positions = {
            f'{arm}_joint{k + 1}': float(measured[base + k])
            for arm, base in (('left', 0), ('right', 7))
            for k in range(6)
        }
        world = self.tree.world(positions)
        return {arm: world[f'{arm}_tcp'][1] for arm in ('left', 'right')}


def event_lines(e: Execution, tcp_of: Callable | None = None) -> list[str]:
    """The event that stopped a cell, as the model reads it: its sentence, every reason (each
    shield rejection with its numbers), and the last ticks before it (measured and commanded
    joints, left then right, each arm's TCP when `tcp_of` places it, and the guards
    evaluated)."""
    lines = [f'Stopped by event {e.event} ({e.skill} {e.arm}): {inline(e.detail)}'.rstrip()]
    reasons = [r for r in e.reasons if r not in e.detail]
    lines += [f'  reason: {inline(r)}' for r in reasons]
    ticks = e.trace[-EVENT_TICKS:]
    if ticks:
        lines.append(
            f'  the last {len(ticks)} ticks before it (rad; left joints 1-6, gripper, then right):'
        )
        for t in ticks:
            guards = f', guards {inline(", ".join(t.guards), 200)}' if t.guards else ''
            tcp = ''
            if tcp_of is not None:
                at = tcp_of(t.measured)
                tcp = f' tcp left {_v(at["left"])} right {_v(at["right"])} m'
            lines.append(
                f'    t={t.time:.2f} s measured {_v(t.measured)} commanded {_v(t.command)}'
                f'{tcp}{guards}'
            )
    return lines


def turn_text(
    cell: CellResult,
    robot: RobotState,
    step_limit: int,
    calls_left: int,
    cameras: list[str],
    tcp_of: Callable | None = None,
) -> str:
    """The turn report after a cell: status, output, event, executions, scene, grips, robot,
    steps and calls left."""
    lines = [f'Cell status: {cell.status}']
    if cell.output:
        lines += [f'Output (what the program printed, each line after "{PROGRAM_QUOTE}"):']
        lines += quoted(cell.output)
    else:
        lines.append('Output: (nothing printed)')
    if cell.traceback:
        lines += [f'Error (each line after "{PROGRAM_QUOTE}"):', *quoted(cell.traceback)]
    if cell.stopped_by is not None:
        lines += event_lines(cell.stopped_by, tcp_of)
    if cell.restored:
        lines.append(f'Names the program rebound were restored: {", ".join(cell.restored)}')
    lines += [f'Kernel: {inline(note)}' for note in cell.notes]
    if cell.events_handled:
        lines.append(f'Events absorbed by your handlers: {cell.events_handled}')
    if cell.executions:
        shown = cell.executions[-LAST_EXECUTIONS:]
        skipped = len(cell.executions) - len(shown)
        lines.append(
            f'Executions ({len(cell.executions)}'
            + (f', the last {len(shown)}' if skipped else '')
            + '):'
        )
        for e in shown:
            detail = f': {inline(e.detail)}' if e.detail else ''
            counts = '' if e.chunks is None else f' ({e.chunks} chunks, {e.actions} actions)'
            lines.append(
                f'  {e.skill} {e.arm} -> {e.event} after {len(e.trace)} ticks{counts}{detail}'
            )
    else:
        lines.append('Executions: none')
    scene = cell.scene
    if scene.measured:
        lines.append('Scene (every object located so far, measured now):')
        for o in scene.objects:
            lines.append(
                f'  {inline(o.id)} "{inline(o.label)}" at {_v(o.position)} m, size {_v(o.size)} m'
            )
        if not scene.objects:
            lines.append('  (no located object is visible now)')
    grips = [
        f'{arm} holds {inline(obj)}' if obj else f'{arm} holds nothing'
        for arm, obj in scene.held.items()
    ]
    if grips:
        lines.append('Grips: ' + '; '.join(grips) + '.')
    lines.append(robot_text(robot))
    lines.append(f'Env steps: {robot.step} of {step_limit} used.')
    lines.append(f'Model calls left: {calls_left}.')
    if cameras:
        lines.append(
            f'Images: {len(cell.images)} shown by the program, then fresh views of '
            f'{", ".join(cameras)} with located objects outlined.'
        )
    return '\n'.join(lines)


def verdict_text(claim: str, verdict: ClaimAnswer, calls_left: int) -> str:
    if not verdict.answered:
        answer = f'The verifier could not answer: {verdict.sentence}'
    else:
        answer = f'Verifier: {"YES" if verdict.yes else "NO"}. {verdict.sentence}'
    return f'Claim: {claim}\n{answer}\nModel calls left: {calls_left}.'
