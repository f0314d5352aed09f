"""Press three buttons in the order the instruction states: the order changes with the layout."""

import itertools

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import Outcome, Task, WorldSnapshot
from harness_bench.tasks.press_button import LATCH_N, button
from harness_bench.verifier import Absent, Present

_RGBA = {
    'red': (0.85, 0.1, 0.1, 1.0),
    'blue': (0.1, 0.25, 0.85, 1.0),
    'yellow': (0.95, 0.8, 0.1, 1.0),
}
_ORDERS = list(itertools.permutations(_RGBA))


class PressInOrder(Task):
    name = 'press_in_order'
    kind = 'press'
    category = 'long_horizon'
    step_limit = 1500
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {'red': (-0.2, 0.02), 'blue': (0.02, 0.07), 'yellow': (0.18, -0.01)},
        {'red': (0.16, 0.06), 'blue': (-0.22, 0.0), 'yellow': (-0.04, -0.02)},
        {'red': (-0.06, 0.08), 'blue': (0.2, 0.02), 'yellow': (-0.24, 0.04)},
    )
    regions = {colour: Region((-0.28, 0.28), (-0.06, 0.1), 0.03) for colour in _RGBA}
    # The instruction is the layout's (build sets it); this says what it is like.
    instruction = 'Press the buttons in this order: <a permutation of red, blue, yellow>.'
    description = (
        'Three round buttons (6 cm across, 2 cm high), red, blue and yellow, are fixed to the '
        f'table. A button latches (turns green) when pressed with at least {LATCH_N:.0f} N. '
        'Success: all three latched in the order the instruction states, every gripper that '
        'holds nothing is open and both arms are home.'
    )

    # Perception sees which buttons latched, not in what order: the goal is the same for every
    # instruction (Task.claims).
    goal = tuple(Absent(f'{c} button') for c in _RGBA) + (Present('green button'),)

    def build(self, spots, rng):
        self.order = _ORDERS[int(rng.integers(len(_ORDERS)))]
        self.instruction = f'Press the buttons in this order: {", ".join(self.order)}.'
        out = []
        for colour, rgba in _RGBA.items():
            x, y = np.array(spots[colour]) + rng.uniform(-0.005, 0.005, 2)
            out.append(button(colour, rgba, float(x), float(y)))
        return out

    def check(self, world: WorldSnapshot) -> Outcome:
        wanted = tuple(f'{c}_button' for c in self.order)
        pressed = tuple(world.latch_order)
        problems = []
        if pressed != wanted:
            said = ', '.join(b.removesuffix('_button') for b in pressed) or 'none'
            problems.append(f'the buttons latched in the order {said}, not {", ".join(self.order)}')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        # Half the score for the buttons pressed in the right order before the first wrong one.
        right = 0
        while right < min(len(pressed), 3) and pressed[right] == wanted[right]:
            right += 1
        score = 0.5 * right / 3 + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, f'pressed {", ".join(self.order)}, in that order')


TASK = PressInOrder  # this module is a bench task plugin (harness_bench.tasks)
