"""Press one of two buttons: a latched contact."""

import numpy as np

from harness_bench.layout import Region
from harness_bench.task import ObjectSpec, Outcome, Task, WorldSnapshot
from harness_bench.verifier import Absent, Present

LATCH_N = 2.0
BUTTON_SIZE = (0.03, 0.01)  # radius, half height: 6 cm across, 2 cm high
LATCHED_RGBA = (0.1, 0.85, 0.2, 1.0)  # a latched button turns green


def button(colour: str, rgba: tuple, x: float, y: float) -> ObjectSpec:
    """A round button fixed to the table at x, y that latches (turns green) once the robot
    presses it with LATCH_N."""
    radius, half = BUTTON_SIZE
    return ObjectSpec(
        f'{colour}_button',
        f'{colour} button',
        'cylinder',
        (radius, half, 0.0),
        rgba,
        (x, y, half),
        movable=False,
        latch_force=LATCH_N,
        latched_rgba=LATCHED_RGBA,
    )


class PressButton(Task):
    name = 'press_button'
    kind = 'press'
    category = 'precision'
    step_limit = 750
    judged_after_wrap_up = True  # arms home and idle grippers open count
    layouts = 3
    fixed = (
        {'red_button': (-0.18, 0.02), 'blue_button': (0.12, 0.04)},
        {'red_button': (0.16, 0.06), 'blue_button': (-0.1, 0.0)},
        {'red_button': (-0.08, 0.07), 'blue_button': (0.05, -0.02)},
    )
    # The blue button is never touched; the nearer arm presses the red one.
    regions = {
        'red_button': Region((-0.3, -0.02), (-0.08, 0.12), 0.03, 'left', 0.02),
        'blue_button': Region((-0.3, 0.26), (-0.08, 0.12), 0.03, '', 0.02),
    }
    mirror = True
    instruction = 'Press the red button, not the blue one.'
    description = (
        'Two round buttons (6 cm across, 2 cm high) are fixed to the table, one red and one '
        f'blue. A button latches (turns green) when pressed with at least {LATCH_N:.0f} N. '
        'Success: the red button latched, the blue one did not, every gripper that holds '
        'nothing is open and both arms are home.'
    )

    goal = (Absent('red button'), Present('blue button'), Present('green button'))

    def build(self, spots, rng):
        out = []
        for (colour, rgba), xy in zip(
            (('red', (0.85, 0.1, 0.1, 1.0)), ('blue', (0.1, 0.25, 0.85, 1.0))),
            spots.values(),
            strict=True,
        ):
            x, y = np.array(xy) + rng.uniform(-0.005, 0.005, 2)
            out.append(button(colour, rgba, float(x), float(y)))
        return out

    def check(self, world: WorldSnapshot) -> Outcome:
        problems = []
        red = 'red_button' in world.latched
        if not red:
            problems.append('the red button was not pressed')
        if 'blue_button' in world.latched:
            problems.append('the blue button was pressed')
        problems += self.idle_grippers_open(world) + self.arms_home(world)
        score = 0.5 * red + 0.5 * (not problems)
        if problems:
            return Outcome(False, score, '; '.join(problems))
        return Outcome(True, 1.0, 'the red button latched and the blue one did not')


TASK = PressButton  # this module is a bench task plugin (harness_bench.tasks)
