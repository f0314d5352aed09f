"""The expert's task scripts: one per task kind it learned, written with the contact skills.

Each script looks once from the start pose (objects it will move later are looked at again
when their turn comes), acts with harness_kernel.contact's ContactSkills over this package's
actuation, and leaves the scene as the task wants it judged: lifting and hand-over end with
the object held up; the other kinds end with both arms home and every gripper open. A step
that cannot be done raises ScriptError, whose sentence is the policy's last `info`. Objects the
instruction said to leave (`TaskPlan.avoid`) are never picked as a target; a qualifier the
expert cannot read (`TaskPlan.unread`) is owned up to in the last sentence.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

import numpy as np
from harness_kernel.contact import ContactSkills
from harness_perception.measure import SHAPE_WORDS
from harness_perception.query import Query
from harness_types.execution import SKILL_ERROR, Execution
from harness_types.robot_state import ARMS, gripper_index
from harness_types.scene import Grip, LocatedObject

from harness_expert.actuation import Actuation
from harness_expert.instruction import TaskPlan
from harness_expert.locating import Locator

LIFT_MARGIN_M = 0.05  # above the height asked, so that a small sag still counts
PUSH_CLOSE_ENOUGH_M = 0.025  # the cube this near the zone's centre needs no second push
PUSH_CLEARANCE_M = 0.03  # the pusher starts this far behind the cube (ContactSkills.push)
# A push runs this much longer than the cube's way to the zone's centre: the pusher first
# closes the PUSH_CLEARANCE_M gap behind the cube, then carries it 5 mm past the centre.
PUSH_OVERSHOOT_M = 0.035
MAX_PUSHES = 3
PUSH_REFIND_M = 0.12  # a pushed cube may end this far from where it should
REFIND_M = 0.05  # an object seen again this near where it should be is that object
FIXTURES = ('zone', 'bowl', 'button')  # shapes (last word of a label) that are no block to move


class ScriptError(RuntimeError):
    """A step of the script that could not be done; the message says which and why."""


def fail(skill: str, arm: str, detail: str) -> NoReturn:
    """ContactSkills' `fail`: the expert has no handlers, a failed step ends the script."""
    raise ScriptError(detail)


def checked(execute: Callable[[str, dict], Execution]) -> Callable[[str, dict], Execution]:
    """ContactSkills' `execute`: a step that could not even start (SKILL_ERROR: out of reach,
    no straight line) ends the script, as an escalated event ends a program's cell. BLOCKED
    goes on (a press stops on its button)."""

    def run(skill: str, args: dict) -> Execution:
        e = execute(skill, args)
        if e.event == SKILL_ERROR:
            raise ScriptError(e.detail)
        return e

    return run


def side(position: np.ndarray) -> str:
    """The arm on the object's side of the table."""
    return 'left' if position[0] < 0 else 'right'


def words_of(label: str) -> set[str]:
    """Every word a query may use for an object perception labelled `label` ('red cube'): its
    label's words and its shape's synonyms, as perception's own matching has them."""
    words = label.split()
    return set(words) | set(SHAPE_WORDS.get(words[-1], ()) if words else ())


class TaskScript:
    """Runs one TaskPlan; `run()` returns what it did in one sentence."""

    def __init__(
        self, plan: TaskPlan, act: Actuation, contact: ContactSkills, locator: Locator
    ) -> None:
        self.plan = plan
        self.act = act
        self.contact = contact
        self.locator = locator
        self.scripts: dict[str, Callable[[], str]] = {
            'lift': self.lift,
            'place': self.place,
            'stack': self.stack,
            'press': self.press,
            'push': self.push,
            'sort': self.sort,
            'handover': self.handover,
        }

    def run(self) -> str:
        script = self.scripts.get(self.plan.kind)
        if script is None:
            raise ScriptError(f'I learned no task of the kind {self.plan.kind!r}')
        said = script()
        if self.plan.unread:
            named = self.plan.target or ', '.join(self.plan.order)
            said += f' (I cannot read "{self.plan.unread}": I picked the first {named} I saw)'
        return said

    # Looking ------------------------------------------------------------------------------

    def avoided(self, obj: LocatedObject) -> bool:
        """Whether the instruction said to leave `obj` ("not the blue one")."""
        words = words_of(obj.label)
        return any(Query.parse(q).matches(words) for q in self.plan.avoid)

    def find(self, query: str, exclude: tuple[str, ...] = ()) -> LocatedObject:
        """The first object matching `query` the cameras show now (none of the `exclude`d
        shapes, none the instruction said to leave)."""
        seen = [
            o
            for o in self.locator.locate(self.act.obs, query)
            if o.label.split()[-1] not in exclude
        ]
        found = [o for o in seen if not self.avoided(o)]
        if not found:
            left = f' other than the {seen[0].label} I was told to leave' if seen else ''
            raise ScriptError(f'I see no {query}{left}')
        return found[0]

    def again(
        self, obj: LocatedObject, where: np.ndarray | None = None, within: float = REFIND_M
    ) -> LocatedObject:
        """`obj` looked at again: the object of its colour nearest to `where` (default: where
        it was) if one is `within` of it, else `obj` as expected there. Perception's ids and
        shapes are not trusted across looks (a block on another may be seen as a cylinder with
        a new id), nor are objects hidden by the arm seen at all."""
        where = np.asarray(obj.position if where is None else where, dtype=float)
        colour, shape = obj.label.split()[0], obj.label.split()[-1]
        same = [
            o
            for o in self.locator.locate(self.act.obs, colour)
            if o.label.split()[0] == colour
            and (o.label.split()[-1] in FIXTURES) == (shape in FIXTURES)
        ]
        if same:
            near = min(same, key=lambda o: float(np.linalg.norm(o.position[:2] - where[:2])))
            if float(np.linalg.norm(near.position[:2] - where[:2])) < within:
                return near
        top = float(where[2] + obj.size[2] / 2)
        return LocatedObject(obj.id, obj.label, where, obj.size, top, [])

    # Endings ------------------------------------------------------------------------------

    def wrap_up(self) -> None:
        """Both arms home and both grippers open (how the judged tasks want the scene)."""
        self.act.home()
        for arm in ARMS:
            if self.act.command[gripper_index(arm)] < 0.99:
                self.act.gripper('open_gripper', arm, 1.0)

    def _grip(self, result: Grip | Execution) -> Grip:
        if not isinstance(result, Grip):
            raise ScriptError(result.detail)
        return result

    # The kinds ----------------------------------------------------------------------------

    def lift(self) -> str:
        obj = self.find(self.plan.target, FIXTURES)
        bottom = float(obj.position[2] - obj.size[2] / 2 - self.act.table_z)
        lift = max(0.12, self.plan.lift_m + LIFT_MARGIN_M - bottom)
        grip = self._grip(self.contact.pick(obj, self.plan.arm, lift=lift))
        self.act.hold(self.act.chunk)
        return f'holding the {obj.label} with the {grip.arm} arm, lifted {lift * 100:.0f} cm'

    def place(self) -> str:
        obj = self.find(self.plan.target, FIXTURES)
        container = self.find(self.plan.destination)
        self._grip(self.contact.pick(obj, self.plan.arm))
        self.contact.place(into=container)
        self.wrap_up()
        return f'put the {obj.label} into the {container.label}'

    def stack(self) -> str:
        order = list(self.plan.order)
        blocks = [self.find(q, FIXTURES) for q in order]
        if len({b.id for b in blocks}) < len(blocks):
            raise ScriptError(f'I see fewer distinct blocks than {", ".join(order)}')
        arm = self.plan.arm or side(blocks[0].position)
        lower = blocks[0]
        for upper in blocks[1:]:
            upper = self.again(upper)
            grip = self._grip(self.contact.pick(upper, arm))
            lower = self.again(lower, lower.position)
            self.contact.place(onto=lower)
            # Where the block should now stand: on the one below (the next block goes on it).
            on = np.array([lower.position[0], lower.position[1], lower.top + grip.height / 2])
            lower = LocatedObject(upper.id, upper.label, on, upper.size, on[2] + grip.height / 2)
        self.wrap_up()
        return 'stacked ' + ', '.join(b.label for b in blocks) + ' (bottom to top)'

    def press(self) -> str:
        button = self.find(self.plan.target)  # never one it was told to leave
        # No force reaches a policy: press a fixed depth below the top (the button is fixed;
        # the arm stops on it and the position error presses).
        self.contact.press(button, self.plan.arm, depth=0.012)
        self.wrap_up()
        return f'pressed the {button.label}'

    def push(self) -> str:
        cube = self.find(self.plan.target, FIXTURES)
        zone = self.find(self.plan.destination)
        pushes = 0
        gap = zone.position[:2] - cube.position[:2]
        while np.linalg.norm(gap) > PUSH_CLOSE_ENOUGH_M and pushes < MAX_PUSHES:
            distance = float(min(0.3, np.linalg.norm(gap) + PUSH_OVERSHOOT_M))
            direction = gap / np.linalg.norm(gap)
            self.contact.push(cube, direction, distance, self.plan.arm, clearance=PUSH_CLEARANCE_M)
            pushes += 1
            # The pusher starts PUSH_CLEARANCE_M behind the cube: the cube moves that much less.
            moved = cube.position[:2] + direction * (distance - PUSH_CLEARANCE_M)
            cube = self.again(cube, np.r_[moved, cube.position[2]], PUSH_REFIND_M)
            gap = zone.position[:2] - cube.position[:2]
        self.wrap_up()
        return f'pushed the {cube.label} into the {zone.label} in {pushes} pushes'

    def sort(self) -> str:
        things = [o for o in self.locator.locate(self.act.obs, '') if not self.avoided(o)]
        bins = [o for o in things if o.label.split()[-1] == 'bowl']
        blocks = [o for o in things if o.label.split()[-1] not in FIXTURES + ('bar',)]
        if not bins or not blocks:
            raise ScriptError('I see no blocks or no bins to sort them into')
        done = []
        for block in blocks:
            colour = block.label.split()[0]
            wanted = self.plan.bins.get(colour, f'{colour} bin').split()[0]
            target = [b for b in bins if b.label.split()[0] == wanted]
            if not target:
                continue  # a block of a colour without a bin stays where it is
            block = self.again(block)
            self._grip(self.contact.pick(block, self.plan.arm))
            self.contact.place(into=target[0])
            self.act.home()
            done.append(f'{block.label} into the {target[0].label}')
        if not done:
            colours = ', '.join(dict.fromkeys(b.label.split()[0] for b in blocks))
            raise ScriptError(f'I see no bin for any block I see (blocks: {colours})')
        self.wrap_up()
        return 'sorted: ' + '; '.join(done)

    def handover(self) -> str:
        bar = self.find(self.plan.target)
        giver = self.plan.arm or side(bar.position)
        receiver = self.plan.to_arm or ('right' if giver == 'left' else 'left')
        # Off the centre toward the robot, leaving the far half for the receiver.
        self._grip(self.contact.pick(bar, giver, along=-0.05))
        self._grip(self.contact.transfer(receiver))
        self.act.hold(self.act.chunk)
        return f'handed the {bar.label} from the {giver} arm to the {receiver} arm'
