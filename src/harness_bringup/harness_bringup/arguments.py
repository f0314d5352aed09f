"""The `harness` command's argument types and shared help texts: each says in one line what is
wrong with a value."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from harness_types.config import INT64_MAX, INTERFACES


def _positive_float(text: str) -> float:
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f'must be positive, not {text}')
    return value


def _perception(text: str) -> str:
    """A perception backend that exists (as kernel.perception is checked, said of the flag)."""
    from harness_types.plugins import plugin_problem

    from harness_perception import BACKENDS, FACTORY

    if problem := plugin_problem(BACKENDS, text, FACTORY):
        raise argparse.ArgumentTypeError(problem)
    return text


def _rate(text: str) -> float:
    value = _positive_float(text)
    if not 1e-3 <= value <= 1e3:
        raise argparse.ArgumentTypeError(f'a rate is within 0.001..1000, not {text}')
    return value


def _delay(text: str) -> float:
    value = _non_negative(text)
    if value > 3600:
        raise argparse.ArgumentTypeError(f'a delay is at most 3600 s, not {text}')
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a port number') from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f'a port is within 0..65535, not {value}')
    return value


def _layout(text: str) -> int:
    from harness_bench.layout import parse_layout

    try:
        return parse_layout(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


# The most sampled layouts of each task one bench takes: its episodes are planned up front
# (a typo's 10^8 took all of a machine's memory before the first one ran).
MAX_SAMPLED_LAYOUTS = 100_000


def _layouts(text: str) -> tuple[int, bool]:
    """--layouts: N (the first N fixed layouts) or random:N (N sampled ones)."""
    sampled = text.strip().lower().startswith('random:')
    count = text.split(':', 1)[1] if sampled else text
    try:
        value = int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f'expected N or random:N, not {text!r}') from None
    if value < 1:
        raise argparse.ArgumentTypeError(f'expected at least 1 layout, not {value}')
    if sampled and value > MAX_SAMPLED_LAYOUTS:
        raise argparse.ArgumentTypeError(
            f'expected at most {MAX_SAMPLED_LAYOUTS:,} sampled layouts a task, not {value:,}'
        )
    return value, sampled


def _interfaces(text: str) -> tuple[str, ...]:
    """--interface of the bench: one rung or several, comma-separated."""
    rungs = tuple(dict.fromkeys(r.strip() for r in text.split(',') if r.strip()))
    wrong = [r for r in rungs if r not in INTERFACES]
    if not rungs or wrong:
        raise argparse.ArgumentTypeError(
            f'interfaces are {", ".join(INTERFACES)} (comma-separated), not {text!r}'
        )
    return rungs


STRATEGY_HELP = (
    "with policies, the scripted baseline's strategy: A (the policy alone), B (the programs "
    "alone) or C (the policy, then the programs), instead of the catalogue's rule"
)


def _strategies(text: str) -> tuple[str, ...]:
    """--strategies of the bench: A, B, C and rule (the agent's choice), comma-separated."""
    ways = tuple(dict.fromkeys(w.strip() for w in text.split(',') if w.strip()))
    wrong = [w for w in ways if w not in ('A', 'B', 'C', 'rule')]
    if not ways or wrong:
        raise argparse.ArgumentTypeError(
            f'strategies are A, B, C and rule (comma-separated), not {text!r}'
        )
    return ways


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not an integer') from None


def _seed(text: str) -> int:
    value = _integer(text)
    if not 0 <= value <= INT64_MAX:
        raise argparse.ArgumentTypeError(f'a seed is an integer in 0..{INT64_MAX}, not {value}')
    return value


def seeds_past_int64(flag: str, base: int, count: int) -> str:
    """Why `count` seeds taken one after another from `base` (given as `flag`) cannot all be
    seeds ('' when they can): the last passes int64."""
    if base + count - 1 > INT64_MAX:
        return f'{flag} {base} + {count} seeds passes {INT64_MAX}'
    return ''


def _randomize(text: str) -> tuple[str, ...]:
    """--randomize: scene randomisation axes (harness_bench.randomization)."""
    from harness_bench.randomization import RandomizeError, parse_axes

    try:
        return parse_axes(text)
    except RandomizeError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


RANDOMIZE_HELP = (
    'randomise the scene beyond the layout, each axis drawn from the seed: lighting, textures '
    '(table and floor), clutter (distractor objects), table_height, camera (mounts moved within '
    'a calibration tolerance; the views and /tf_static say where), language (the instruction '
    'reworded); comma-separated, all, or none (default)'
)


def _positive_int(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f'must be at least 1, not {value}')
    if value > INT64_MAX:  # (a ROS int64 parameter)
        raise argparse.ArgumentTypeError(f'must be at most {INT64_MAX}, not {value}')
    return value


def _positive_int_at_most(most: int) -> Callable[[str], int]:
    """A positive integer no larger than `most` (the argument's type)."""

    def positive_int_at_most(text: str) -> int:
        number = _positive_int(text)
        if number > most:
            raise argparse.ArgumentTypeError(f'at most {most}, not {number}')
        return number

    return positive_int_at_most


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a number') from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f'must be a finite number, not {text}')
    return value


def _non_negative(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f'must be >= 0, not {value}')
    return value


ATTACH_HELP = (
    'join the station already running in this ROS domain (ROS_DOMAIN_ID, default 0), started '
    'with `ros2 launch harness_bringup <setup>.launch.py` or `harness serve`, instead of '
    "starting one; the station keeps its own parameters (the launch's config)"
)


DEFAULT_POLICIES = '(beside the config)'


POLICIES_HELP = (
    'enable the learned half with a policy catalogue (overrides kernel.policies; default '
    'FILE: policies.yaml beside the config file): start(strategy, kind) first, list_policies, '
    "run_policy; the catalogue's local servers are started when they do not answer (a "
    'trained one the first time installs the learning extra, LeRobot and torch: ~8 GB, once)'
)


INTERFACE_HELP = (
    'what one model reply may do (overrides driver.interface): programs (a program per reply, '
    'the harness), skills (R1: one API call per reply, as tool-calling agents work) or actions '
    '(R0: one end-effector or joint target per reply)'
)


RECORDING_HELP = (
    'what each run folder keeps (overrides driver.recording): full (everything: the bag with '
    "the cameras' frames, report.html, the run's LeRobot dataset, which holds camera videos "
    'only where worker.compressed_every_ticks is 1) or lean, for large benches '
    '(summary, events, kernel.log, the ticks, the images the model was sent and a bag of the '
    'joint states and events without camera frames, /tf or model images: what the tables, the '
    'report card and training on states and actions need; '
    '`harness report RUN` and `harness export` make the rest later)'
)
PERCEPTION_HELP = (
    'what locate() sees with (overrides kernel.perception): pixels (RGB-D images and '
    "calibration, what a real camera feeds), oracle (the simulator's segmentation, ground "
    'truth), service (the detector at kernel.perception_service_url), or a dotted module path '
    'of a backend of your own'
)


def _task_arguments(parser: argparse.ArgumentParser, example: str) -> None:
    """TASK, --layout and --seed: what one episode of a bench task is."""
    parser.add_argument('task', help=f'bench task, e.g. {example}')
    parser.add_argument(
        '--layout',
        type=_layout,
        default=0,
        help="task layout: a fixed one (0, 1, 2) or 'random', the layout sampled from --seed "
        '(default 0)',
    )
    parser.add_argument(
        '--seed',
        type=_seed,
        default=0,
        help="seed (default 0): jitters a fixed layout's objects by millimetres, or samples the "
        'random layout',
    )


def _image_size(text: str) -> tuple[int, int]:
    """--image-size HxW, e.g. 96x128."""
    try:
        h, w = (int(v) for v in text.lower().split('x'))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f'expected HEIGHTxWIDTH, e.g. 96x128, not {text!r}'
        ) from None
    if not (8 <= h <= 4096 and 8 <= w <= 4096):
        raise argparse.ArgumentTypeError(f'each side must be 8..4096 pixels, not {text!r}')
    return h, w
