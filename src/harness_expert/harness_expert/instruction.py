"""The instruction parser: what the expert understands of the instruction text (`prompt`).

A learned policy is conditioned on its instruction; the scripted expert reads it with a small
grammar instead: a verb picks the task kind it learned (lift, place, stack, press, push, sort,
handover), colour and shape words name the objects (in perception's own words, so that a mention
is also a `locate` query), and a few relations say the rest (`on`, `into`, `not`, `to the right
arm`, a height in cm). An instruction it does not understand raises `InstructionError` with the
reason; a qualifier it cannot act on (a number of dots, a label) is kept in `unread`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from harness_kernel.perception.colour import COLOUR_NAMES
from harness_kernel.perception.measure import SHAPE_WORDS

KINDS = ('lift', 'place', 'stack', 'press', 'push', 'sort', 'handover')
DEFAULT_LIFT_M = 0.10

# Perception's colour names, and the spellings a person may use for them.
COLOUR_SYNONYMS = {'gray': 'grey', 'violet': 'purple', 'magenta': 'purple'}
COLOURS = frozenset(COLOUR_NAMES) | frozenset(COLOUR_SYNONYMS)
NOUNS = frozenset(w for words in SHAPE_WORDS.values() for w in words)
CONTAINERS = frozenset(SHAPE_WORDS['bowl'])
ZONES = frozenset(SHAPE_WORDS['zone'])
BUTTONS = frozenset(('button', 'disc'))
ARMS = ('left', 'right')
# Words between a colour and its noun that change nothing ("the red small cube").
FILLERS = frozenset(('small', 'big', 'large', 'little', 'wooden', 'plastic', 'square', 'round'))

PRESS_VERBS = frozenset(('press', 'push', 'click', 'hit', 'tap', 'activate'))
PUSH_VERBS = frozenset(('push', 'slide', 'shove', 'nudge'))
STACK_VERBS = frozenset(('stack', 'tower', 'build'))
PLACE_VERBS = frozenset(('put', 'place', 'drop', 'move', 'set', 'transfer', 'bring'))
LIFT_VERBS = frozenset(('pick', 'lift', 'raise', 'grab', 'grasp', 'hold', 'take'))
HANDOVER_WORDS = frozenset(('hand', 'handover', 'pass', 'give'))
NEGATIONS = frozenset(('not', "don't", 'dont', 'never', 'avoid', 'except'))
# A qualifier the expert cannot see: it reads no numbers, dots or labels.
UNREADABLE = re.compile(
    r'\b(\d+|one|two|three|four|five|six)\s+(dots?|pips?|spots?)\b'
    r'|\b(numbered|number|labelled|labeled|label|written|marked|digit)\b'
)
HEIGHT = re.compile(r'(\d+(?:\.\d+)?)\s*(cm|mm|m)\b')


class InstructionError(ValueError):
    """An instruction the expert does not understand; the message says what it missed."""


@dataclass(frozen=True)
class Mention:
    """An object named in the instruction: its colour (perception's name, or ''), its noun
    (a shape word, or '' for "the blue one"), where it starts and the token after it."""

    colour: str
    noun: str
    at: int
    end: int

    @property
    def query(self) -> str:
        """The mention as a `locate` query."""
        return ' '.join(w for w in (self.colour, self.noun) if w)


@dataclass(frozen=True)
class TaskPlan:
    """What the instruction asks, in the expert's terms.

    kind: one of KINDS. target: the query of the object acted on (lift, place, push, press,
    handover). destination: the container (place) or the zone (push). order: stack, bottom to
    top. avoid: press, colours not to press. bins: sort, colour -> query of its bin. lift_m:
    lift, how high the object's bottom must be. arm / to_arm: the arm named to act (handover:
    the giver) and the receiving arm. unread: a qualifier the expert cannot act on."""

    kind: str
    target: str = ''
    destination: str = ''
    order: tuple[str, ...] = ()
    avoid: tuple[str, ...] = ()
    bins: dict[str, str] = field(default_factory=dict)
    lift_m: float = DEFAULT_LIFT_M
    arm: str = ''
    to_arm: str = ''
    unread: str = ''


def tokens(text: str) -> list[str]:
    """Lower-case words; punctuation dropped, except that it separates words."""
    return re.findall(r"[a-z0-9']+(?:\.[0-9]+)?", str(text).lower())


def _colour(word: str) -> str:
    return COLOUR_SYNONYMS.get(word, word) if word in COLOURS else ''


def _noun(word: str) -> str:
    if word in NOUNS:
        return word
    if word.endswith('s') and word[:-1] in NOUNS:
        return word[:-1]  # "blocks", "bins"
    if word.endswith('es') and word[:-2] in NOUNS:
        return word[:-2]  # "boxes"
    return ''


def mentions(words: list[str]) -> list[Mention]:
    """The objects the words name, in order: a colour with the noun that follows it (fillers
    between), a colour alone, or a noun alone. An arm ("the left arm") is not an object."""
    out: list[Mention] = []
    i = 0
    while i < len(words):
        colour = _colour(words[i])
        if colour:
            j = i + 1
            while j < len(words) and words[j] in FILLERS:
                j += 1
            noun = _noun(words[j]) if j < len(words) else ''
            end = j + 1 if noun else i + 1
            out.append(Mention(colour, noun, i, end))
            i = end
            continue
        noun = _noun(words[i])
        if noun:
            out.append(Mention('', noun, i, i + 1))
        i += 1
    return out


def _arm_words(words: list[str]) -> list[tuple[str, int]]:
    """Arms named as arms ("left arm", "right hand", "right gripper"), with their index."""
    return [
        (w, i)
        for i, w in enumerate(words[:-1])
        if w in ARMS and words[i + 1] in ('arm', 'hand', 'gripper')
    ]


def _negated(words: list[str], at: int) -> bool:
    """Whether a negation comes shortly before token `at` ("not the blue one")."""
    return any(w in NEGATIONS for w in words[max(0, at - 3) : at])


def _lift_height(text: str) -> float:
    found = HEIGHT.search(str(text).lower())
    if not found:
        return DEFAULT_LIFT_M
    value, unit = float(found.group(1)), found.group(2)
    return value * {'cm': 0.01, 'mm': 0.001, 'm': 1.0}[unit]


def parse(text: str) -> TaskPlan:
    """The TaskPlan of an instruction; InstructionError says why there is none."""
    words = tokens(text)
    if not words:
        raise InstructionError('the instruction is empty')
    verbs = set(words)
    found = mentions(words)
    objects = [m for m in found if m.noun not in CONTAINERS | ZONES]
    unread_match = UNREADABLE.search(' '.join(words))
    unread = unread_match.group(0) if unread_match else ''

    if verbs & PRESS_VERBS and any(m.noun in BUTTONS for m in found):
        return _press(words, found)
    if 'sort' in verbs or ('by' in verbs and verbs & {'colour', 'color'}):
        return _sort(words, found)
    if verbs & HANDOVER_WORDS and len(_arm_words(words)) >= 1 and objects:
        return _handover(words, objects)
    zones = [m for m in found if m.noun in ZONES]
    if verbs & PUSH_VERBS and zones and objects:
        return TaskPlan('push', target=objects[0].query, destination=zones[0].query)
    order = _stack_order(words, found)
    if order and (verbs & STACK_VERBS or verbs & PLACE_VERBS or 'on' in verbs):
        return TaskPlan('stack', order=order)
    containers = [m for m in found if m.noun in CONTAINERS]
    if verbs & (PLACE_VERBS | LIFT_VERBS) and containers and objects and verbs & {'into', 'in'}:
        return TaskPlan('place', target=objects[0].query, destination=containers[0].query)
    if verbs & LIFT_VERBS and objects:
        arms = _arm_words(words)
        return TaskPlan(
            'lift',
            target=objects[0].query,
            lift_m=_lift_height(text),
            arm=arms[0][0] if arms else '',
            unread=unread,
        )
    raise InstructionError(
        f'I do not understand the instruction {text!r}: I learned to '
        + ', '.join(KINDS)
        + ' named objects by colour and shape'
    )


def _press(words: list[str], found: list[Mention]) -> TaskPlan:
    wanted = [m for m in found if not _negated(words, m.at) and m.colour]
    avoid = tuple(dict.fromkeys(m.colour for m in found if _negated(words, m.at) and m.colour))
    buttons = [m for m in wanted if m.noun in BUTTONS] or wanted
    if not buttons:
        raise InstructionError('press: the instruction names no button to press by its colour')
    return TaskPlan('press', target=f'{buttons[0].colour} button', avoid=avoid)


def _sort(words: list[str], found: list[Mention]) -> TaskPlan:
    """Colour -> bin: each "X into the Y bin" pair; colours without a pair go to the bin of
    their own colour (the script matches by colour when `bins` lacks one)."""
    bins: dict[str, str] = {}
    pending = ''
    for m in found:
        if m.noun in CONTAINERS:
            if m.colour and pending:
                bins[pending] = m.query
            pending = ''
        elif m.colour:
            pending = m.colour
    return TaskPlan('sort', bins=bins)


def _handover(words: list[str], objects: list[Mention]) -> TaskPlan:
    giver, receiver = '', ''
    for arm, i in _arm_words(words):
        if any(w in ('to', 'into', 'toward', 'towards') for w in words[max(0, i - 2) : i]):
            receiver = receiver or arm
        else:
            giver = giver or arm
    if giver and not receiver:
        receiver = 'right' if giver == 'left' else 'left'
    if receiver and not giver:
        giver = 'right' if receiver == 'left' else 'left'
    if giver == receiver:
        raise InstructionError(f'handover: the {giver} arm cannot hand an object to itself')
    return TaskPlan('handover', target=objects[0].query, arm=giver, to_arm=receiver)


def _stack_order(words: list[str], found: list[Mention]) -> tuple[str, ...]:
    """Bottom-to-top queries from "A on (top of) B" relations ("then C on top": on the last
    one stacked); () when the words name no object on another object. A block is known by its
    colour ("green" and "the green block" are one block)."""
    blocks = [m for m in found if m.noun not in CONTAINERS | ZONES | BUTTONS]
    queries: dict[str, str] = {}
    tower: list[str] = []  # keys, bottom first
    for k, m in enumerate(blocks):
        key = m.colour or m.noun
        queries.setdefault(key, f'{m.colour} {m.noun or "block"}'.strip())
        following = blocks[k + 1] if k + 1 < len(blocks) else None
        after = words[m.end : following.at if following else None]
        if after[:1] == ['one']:
            after = after[1:]  # "the yellow one on ..."
        if after[:1] not in (['on'], ['onto'], ['upon'], ['atop']):
            continue
        alone = 'top' in after and 'of' not in after  # "... then the blue block on top"
        lower = tower[-1] if (alone or following is None) and tower else ''
        if not alone and following is not None:
            lower = following.colour or following.noun
            queries.setdefault(lower, f'{following.colour} {following.noun or "block"}'.strip())
        if not lower or lower == key:
            continue
        if not tower:
            tower = [lower, key]
        elif tower[-1] == lower:
            tower.append(key)
        elif key == tower[0] and lower not in tower:
            tower.insert(0, lower)
        else:
            return ()
    return tuple(queries[k] for k in tower) if len(tower) >= 2 else ()
