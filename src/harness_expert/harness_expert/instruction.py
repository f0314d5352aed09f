"""The instruction parser: what the expert understands of the instruction text (`prompt`).

A learned policy is conditioned on its instruction; the scripted expert reads it with a small
grammar instead: a verb picks the task kind it learned (lift, place, stack, press, push, sort,
handover), colour and shape words name the objects (in perception's own words, so that a mention
is also a `locate` query), and a few relations say the rest (`on`, `into`, `to the right arm`, a
height in cm).

What it reads, it reads whole: an instruction it does not understand, or only understands in
part (a second task, an object it has no role for, a verb of a kind it did not learn), raises
`InstructionError` with the reason rather than being cut down to the part it knows. Negation is
read in clauses: "not the blue one", "do not lift the red cube" name objects to leave (`avoid`);
"without grasping it" is a manner, kept by the kinds that never grasp (push, press) and refused
by the others; any other negation is refused. A qualifier it cannot see (a number of dots, a
label, a picture) is kept in `unread`: the script takes a look-alike and says so.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from harness_perception.colour import COLOUR_NAMES
from harness_perception.measure import SHAPE_WORDS

KINDS = ('lift', 'place', 'stack', 'press', 'push', 'sort', 'handover')
DEFAULT_LIFT_M = 0.10
MAX_LIFT_M = 0.40  # above this the arms cannot hold anything over the table
QUOTED_CHARS = 200  # of the instruction quoted in an InstructionError (it reaches the log)

# Perception's colour names, and the spellings a person may use for them.
COLOUR_SYNONYMS = {'gray': 'grey', 'violet': 'purple', 'magenta': 'purple'}
COLOURS = frozenset(COLOUR_NAMES) | frozenset(COLOUR_SYNONYMS)
NOUNS = frozenset(w for words in SHAPE_WORDS.values() for w in words)
CONTAINERS = frozenset(SHAPE_WORDS['bowl'])
ZONES = frozenset(SHAPE_WORDS['zone'])
BUTTONS = frozenset(('button', 'disc'))
FIXED = CONTAINERS | ZONES | BUTTONS  # what is no object to move
ARMS = ('left', 'right')
ARM_NOUNS = ('arm', 'hand', 'gripper')
TOWARD = frozenset(('to', 'into', 'toward', 'towards'))  # before the receiving arm
# Words between a colour and its noun that change nothing ("the red small cube").
FILLERS = frozenset(('small', 'big', 'large', 'little', 'wooden', 'plastic', 'square', 'round'))
# A noun that is also a verb: a shape only after an article or a colour ("Can you ...").
MODAL_NOUNS = frozenset(('can',))
ARTICLES = frozenset(('the', 'a', 'an', 'that', 'this', 'each', 'every'))

PRESS_VERBS = frozenset(('press', 'push', 'click', 'hit', 'tap', 'activate'))
PUSH_VERBS = frozenset(('push', 'slide', 'shove', 'nudge'))
STACK_VERBS = frozenset(('stack', 'tower', 'build'))
PLACE_VERBS = frozenset(('put', 'place', 'drop', 'move', 'set', 'transfer', 'bring'))
LIFT_VERBS = frozenset(('pick', 'lift', 'raise', 'grab', 'grasp', 'hold', 'take'))
SORT_VERBS = frozenset(('sort',))
HANDOVER_VERBS = frozenset(('hand', 'pass', 'give', 'transfer'))
HANDOVER_NOUNS = frozenset(('handover', 'handoff'))
# Words before "hand" that make it the noun ("the right hand", "with one hand"), not the verb.
HAND_NOUN_AFTER = frozenset(
    (*ARMS, 'other', 'one', 'a', 'the', 'either', 'each', 'same', 'free', 'its', 'my', 'your')
)
# Actions the expert knows it did not learn: in an instruction they are a part it cannot do.
OTHER_VERBS = frozenset(
    (
        'shake',
        'throw',
        'toss',
        'rotate',
        'turn',
        'flip',
        'spin',
        'open',
        'wave',
        'fold',
        'pour',
        'wipe',
        'stir',
        'tilt',
        'squeeze',
        'drag',
        'roll',
        'knock',
        'swap',
        'shuffle',
        'insert',
        'hang',
        'touch',
        'kick',
        'remove',
        'clean',
        'arrange',
        'unstack',
        'return',
        'replace',
    )
)
ACTION_VERBS = (
    PRESS_VERBS
    | PUSH_VERBS
    | STACK_VERBS
    | PLACE_VERBS
    | LIFT_VERBS
    | SORT_VERBS
    | HANDOVER_VERBS
    | OTHER_VERBS
)
# The verbs each kind's instructions may use; one of another kind is a second task.
KIND_VERBS = {
    'lift': LIFT_VERBS,
    'place': LIFT_VERBS | PLACE_VERBS,
    'stack': LIFT_VERBS | PLACE_VERBS | STACK_VERBS,
    'press': PRESS_VERBS,
    'push': PUSH_VERBS,
    'sort': LIFT_VERBS | PLACE_VERBS | SORT_VERBS,
    'handover': LIFT_VERBS | HANDOVER_VERBS,
}

NEGATIONS = frozenset(
    ('not', 'never', 'avoid', 'except', 'excluding', 'without', 'dont', 'cannot', 'nor')
)
# Words before a negation that belong to it ("do not", "must never").
AUXILIARIES = frozenset(('do', 'does', 'did', 'must', 'should', 'please', 'but'))
# Words that end a negation's clause ("not the blue one, but the red one").
CLAUSE_ENDS = frozenset(('but', 'instead', 'then', 'rather'))
PUNCTUATION = frozenset(',;:!?.')
# A negated manner the kinds that never grasp keep anyway ("without grasping it").
GRASPING = frozenset(
    (
        *('grasp', 'grasping', 'grasped', 'grab', 'grabbing', 'grabbed', 'grip', 'gripping'),
        *('gripped', 'pick', 'picking', 'picked', 'lift', 'lifting', 'lifted', 'hold'),
        *('holding', 'held', 'take', 'taking', 'took'),
    )
)
NEVER_GRASP = frozenset(('push', 'press'))

# A qualifier the expert cannot see: it reads no numbers, dots, labels or pictures.
UNREADABLE = re.compile(
    r'\b(\d+|one|two|three|four|five|six)\s+(dots?|pips?|spots?|stripes?|marks?)\b'
    r'|\b(numbered|number|numbers|labelled|labeled|label|labels|written|marked|digit|digits'
    r'|letter|letters|picture|pictures|image|images|icon|icons|logo|logos|sticker|stickers'
    r'|symbol|symbols|photo|drawing|printed|star|stars|heart|hearts|arrow|arrows|smiley)\b'
    # "cube 2", not "cube 2 cm" nor "cube 0.2 m" (a height)
    rf'|\b(?:{"|".join(sorted(NOUNS))})s?\s+#?\d+(?:\.\d+)?(?![\d.])(?!\s*(?:cm|mm|m)\b)'
)
HEIGHT = re.compile(r'(-?\d+(?:\.\d+)?)\s*(cm|mm|m)\b')


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

    @property
    def key(self) -> str:
        """What tells objects apart in an instruction: the colour ("the green block" and
        "green" are one block), else the noun."""
        return self.colour or self.noun


@dataclass(frozen=True)
class TaskPlan:
    """What the instruction asks, in the expert's terms.

    kind: one of KINDS. target: the query of the object acted on (lift, place, push, press,
    handover). destination: the container (place) or the zone (push). order: stack, bottom to
    top. avoid: queries of objects the instruction says to leave (never a target). bins: sort,
    colour -> query of its bin. lift_m: lift, how high the object's bottom must be. arm / to_arm:
    the arm named to act (handover: the giver) and the receiving arm. unread: a qualifier the
    expert cannot act on (it takes a look-alike)."""

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
    return [w for w in _marked(text) if w not in PUNCTUATION]


def _marked(text: str) -> list[str]:
    """Lower-case words and the punctuation that ends clauses, in order ("1.5" is one word)."""
    text = str(text).lower().replace('\u2019', "'")
    return re.findall(r"[a-z0-9']+(?:\.[0-9]+)?|[,;:!?.]", text)


def _quoted(text: str) -> str:
    """The instruction as an error quotes it: clipped, since it may be anything at all."""
    text = str(text)
    return repr(text if len(text) <= QUOTED_CHARS else text[:QUOTED_CHARS] + '...')


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
        if noun and (noun not in MODAL_NOUNS or (i > 0 and words[i - 1] in ARTICLES)):
            out.append(Mention('', noun, i, i + 1))
        i += 1
    return out


def _arm_words(words: list[str]) -> list[tuple[str, int]]:
    """Arms named as arms ("left arm", "right hand", "right gripper"), with their index."""
    return [(w, i) for i, w in enumerate(words[:-1]) if w in ARMS and words[i + 1] in ARM_NOUNS]


def _is_verb(words: list[str], i: int) -> bool:
    """Whether words[i] is an action verb: "hand" is one unless it is the noun ("the right
    hand", "with one hand")."""
    if words[i] not in ACTION_VERBS:
        return False
    return not (words[i] == 'hand' and i > 0 and words[i - 1] in HAND_NOUN_AFTER)


def _verbs(words: list[str]) -> set[str]:
    return {w for i, w in enumerate(words) if _is_verb(words, i)}


def _receiving(words: list[str], start: int) -> bool:
    """Whether an arm is named as the receiver after token `start` ("to the right arm", "to
    the other hand")."""
    return any(
        words[i] in ('left', 'right', 'other')
        and words[i + 1] in ARM_NOUNS
        and any(w in TOWARD for w in words[max(0, i - 2) : i])
        for i in range(start, len(words) - 1)
    )


def _is_handover(words: list[str]) -> bool:
    """A hand-over: "handover", or a hand-over verb used as one: to an arm ("give it to the
    left arm"), or over ("hand the bar over", "hand it to ..."). "The right hand" alone names
    the arm that acts, nothing more."""
    if HANDOVER_NOUNS & set(words):
        return True
    for i, w in enumerate(words):
        if w not in HANDOVER_VERBS or not _is_verb(words, i):
            continue
        if _receiving(words, i + 1) or 'over' in words[i + 1 : i + 6]:
            return True
        if w == 'hand' and words[i + 1 : i + 2] in (['it'], ['them']):
            return True
    return False


def _clauses_without_negations(marked: list[str]) -> tuple[list[str], list[list[str]]]:
    """The words outside negations, and each negation's clause: from the negation to the next
    punctuation, "but"/"instead"/"then", or "and"/"or" before a verb ("do not lift the red
    cube, lift the blue one": ["lift", "the", "blue", "one"] and [["not", "lift", "the",
    "red", "cube"]])."""
    words: list[str] = []
    scopes: list[list[str]] = []
    i = 0
    while i < len(marked):
        w = marked[i]
        if w in PUNCTUATION:
            i += 1
            continue
        if w not in NEGATIONS and not w.endswith("n't"):
            words.append(w)
            i += 1
            continue
        while words and words[-1] in AUXILIARIES:
            words.pop()
        j = i + 1
        while j < len(marked):
            t = marked[j]
            nxt = marked[j + 1] if j + 1 < len(marked) else ''
            if t in PUNCTUATION or t in CLAUSE_ENDS:
                break
            if t in ('and', 'or') and (nxt in ACTION_VERBS or nxt == 'then'):
                break
            j += 1
        scopes.append([t for t in marked[i:j] if t not in PUNCTUATION])
        i = j
    return words, scopes


def _negations(scopes: list[list[str]], text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What the negated clauses say: the queries of objects to leave, and the manners not to
    act in ("grasping" of "without grasping it"); InstructionError for one it cannot follow."""
    avoid: list[str] = []
    manners: list[str] = []
    for scope in scopes:
        rest = scope[1:]
        if scope[0] == 'without' and rest and rest[0].endswith('ing'):
            manners.append(rest[0])  # "without grasping it", "without touching the bowl"
            continue
        named = mentions(rest)
        if named:
            avoid += [m.query for m in named]  # "not the blue one", "do not lift the red cube"
            continue
        grasping = [w for w in rest if w in GRASPING]
        if grasping:
            manners.append(grasping[0])  # "do not grasp it"
            continue
        raise InstructionError(
            f'I cannot follow "{" ".join(scope)}" in {_quoted(text)}: I understand a negation '
            'naming objects to leave ("not the blue one") or "without grasping" a pushed object'
        )
    return tuple(dict.fromkeys(avoid)), tuple(manners)


def _lift_height(text: str) -> float:
    found = HEIGHT.search(str(text).lower())
    if not found:
        return DEFAULT_LIFT_M
    value, unit = float(found.group(1)), found.group(2)
    height = value * {'cm': 0.01, 'mm': 0.001, 'm': 1.0}[unit]
    if not 0.0 < height <= MAX_LIFT_M:
        raise InstructionError(
            f'lift: {found.group(0)!r} is no height I can lift to (more than 0 and at most '
            f'{MAX_LIFT_M * 100:.0f} cm above the table) in {_quoted(text)}'
        )
    return height


def _unread(words: list[str]) -> str:
    found = UNREADABLE.search(' '.join(words))
    return found.group(0) if found else ''


def parse(text: str) -> TaskPlan:
    """The TaskPlan of an instruction; InstructionError says why there is none."""
    marked = _marked(text)
    if not any(w not in PUNCTUATION for w in marked):
        raise InstructionError('the instruction is empty')
    words, scopes = _clauses_without_negations(marked)
    avoid, manners = _negations(scopes, text)
    if not words:
        raise InstructionError(f'{_quoted(text)} only says what not to do')
    if not _verbs(words):
        # "Do not lift the red cube but the blue one": the verb is said once, negated.
        negated = [w for scope in scopes for i, w in enumerate(scope) if _is_verb(scope, i)]
        words = negated[:1] + words
    plan = _plan(words, text)
    if avoid:
        plan = dataclasses.replace(plan, avoid=avoid)
    _check_whole(plan, words, manners, text)
    return plan


def _not_understood(text: str, why: str = '') -> InstructionError:
    return InstructionError(
        f'I do not understand the instruction {_quoted(text)}'
        + (f': {why}' if why else '')
        + ': I learned to '
        + ', '.join(KINDS)
        + ' named objects by colour and shape'
    )


def _plan(words: list[str], text: str) -> TaskPlan:
    """The plan of the words outside negations (the kind, its objects and arms)."""
    said = set(words)
    verbs = _verbs(words)
    found = mentions(words)
    objects = [m for m in found if m.noun not in CONTAINERS | ZONES]
    arms = _arm_words(words)
    arm = arms[0][0] if arms else ''
    unread = _unread(words)
    if verbs & PRESS_VERBS and any(m.noun in BUTTONS for m in mentions(tokens(text))):
        return _press(found, arm, unread)
    if verbs & SORT_VERBS or ('by' in said and said & {'colour', 'color'}):
        if unread:
            raise InstructionError(
                f'sort: I cannot read "{unread}"; I sort by colour only ({_quoted(text)})'
            )
        return _sort(found, arm)
    if _is_handover(words) and objects:
        return _handover(words, objects, unread)
    zones = [m for m in found if m.noun in ZONES]
    if verbs & PUSH_VERBS and zones and objects:
        return TaskPlan('push', objects[0].query, zones[0].query, arm=arm, unread=unread)
    order = _stack_order(words, found)
    if order and (verbs & (STACK_VERBS | PLACE_VERBS) or said & {'on', 'onto'}):
        return TaskPlan('stack', order=order, arm=arm, unread=unread)
    containers = [m for m in found if m.noun in CONTAINERS]
    if verbs & (PLACE_VERBS | LIFT_VERBS) and containers and objects and said & {'into', 'in'}:
        return TaskPlan('place', objects[0].query, containers[0].query, arm=arm, unread=unread)
    if verbs & LIFT_VERBS and objects:
        return TaskPlan('lift', objects[0].query, lift_m=_lift_height(text), arm=arm, unread=unread)
    raise _not_understood(text)


def _check_whole(plan: TaskPlan, words: list[str], manners: tuple[str, ...], text: str) -> None:
    """InstructionError unless the plan is all the instruction asks: no verb of another kind,
    no object it has no role for, no manner it cannot keep, no target it was told to leave."""
    extra = sorted(_verbs(words) - KIND_VERBS[plan.kind])
    if extra:
        raise _not_understood(
            text, f'I read a {plan.kind} but cannot also {" / ".join(extra)} in one instruction'
        )
    for manner in manners:
        if manner not in GRASPING or plan.kind not in NEVER_GRASP:
            raise _not_understood(text, f'I cannot {plan.kind} without {manner}')
    found = mentions(words)
    roles = {
        'lift': {plan.target},
        'handover': {plan.target},
        'place': {plan.target, plan.destination},
        'push': {plan.target, plan.destination},
    }
    if plan.kind in roles:
        keys = {_key(q) for q in roles[plan.kind]}
        other = [m.query for m in found if m.key not in keys]
        if other:
            raise _not_understood(
                text, f'a {plan.kind} has no role for the {", ".join(dict.fromkeys(other))}'
            )
    elif plan.kind == 'stack':
        tower = {_key(q) for q in plan.order}
        other = [m.query for m in found if m.noun in FIXED or m.key not in tower]
        if other:
            raise _not_understood(
                text, f'the tower has no place for the {", ".join(dict.fromkeys(other))}'
            )
    elif plan.kind == 'press':
        colour = plan.target.split()[0]
        other = [m.query for m in found if m.colour and m.colour != colour]
        if other:
            raise _not_understood(
                text, f'I press one button, not also the {", ".join(dict.fromkeys(other))}'
            )
    named = [plan.target, plan.destination, *plan.order]
    left = [q for q in named if q and any(set(a.split()) <= set(q.split()) for a in plan.avoid)]
    if left:
        raise InstructionError(
            f'{_quoted(text)} says both to {plan.kind} the {left[0]} and to leave it'
        )


def _key(query: str) -> str:
    """The Mention.key of a mention's query ('red cube' -> 'red', 'bowl' -> 'bowl')."""
    return query.split()[0] if query else ''


def _press(found: list[Mention], arm: str, unread: str) -> TaskPlan:
    named = [m for m in found if m.colour]
    buttons = [m for m in named if m.noun in BUTTONS] or named
    if not buttons:
        raise InstructionError('press: the instruction names no button to press by its colour')
    return TaskPlan('press', target=f'{buttons[0].colour} button', arm=arm, unread=unread)


def _sort(found: list[Mention], arm: str) -> TaskPlan:
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
    return TaskPlan('sort', bins=bins, arm=arm)


def _handover(words: list[str], objects: list[Mention], unread: str) -> TaskPlan:
    giver, receiver = '', ''
    for arm, i in _arm_words(words):
        if any(w in TOWARD for w in words[max(0, i - 2) : i]):
            receiver = receiver or arm
        else:
            giver = giver or arm
    if giver and not receiver:
        receiver = 'right' if giver == 'left' else 'left'
    if receiver and not giver:
        giver = 'right' if receiver == 'left' else 'left'
    if giver and giver == receiver:
        raise InstructionError(f'handover: the {giver} arm cannot hand an object to itself')
    return TaskPlan('handover', target=objects[0].query, arm=giver, to_arm=receiver, unread=unread)


# Words between a block and "it on ..." that keep "it" that block ("pick up the red cube and
# put it on the blue cube").
PRONOUN_LEAD = frozenset(('and', 'then', 'up', 'now', 'also')) | PLACE_VERBS | STACK_VERBS
ON_WORDS = ('on', 'onto', 'upon', 'atop')


def _relation(after: list[str]) -> list[str]:
    """The words after a block, from its relation on: "the yellow one on ..." and "... and put
    it on ..." say the same as "... on ..."."""
    if after[:1] == ['one']:
        return after[1:]
    for k, w in enumerate(after[:-1]):
        if w in ('it', 'them') and after[k + 1] in ON_WORDS:
            if all(v in PRONOUN_LEAD | LIFT_VERBS for v in after[:k]):
                return after[k + 1 :]
            break
    return after


def _stack_order(words: list[str], found: list[Mention]) -> tuple[str, ...]:
    """Bottom-to-top queries from "A on (top of) B" relations ("then C on top": on the last
    one stacked); () when the words name no object on another object. A block is known by its
    colour ("green" and "the green block" are one block)."""
    blocks = [m for m in found if m.noun not in FIXED]
    queries: dict[str, str] = {}
    tower: list[str] = []  # keys, bottom first
    for k, m in enumerate(blocks):
        key = m.key
        queries.setdefault(key, f'{m.colour} {m.noun or "block"}'.strip())
        following = blocks[k + 1] if k + 1 < len(blocks) else None
        after = _relation(words[m.end : following.at if following else None])
        if not after or after[0] not in ON_WORDS:
            continue
        alone = 'top' in after and 'of' not in after  # "... then the blue block on top"
        lower = tower[-1] if (alone or following is None) and tower else ''
        if not alone and following is not None:
            lower = following.key
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
