"""Guards (`when`) and watches (`watch`): conditions checked every tick that end an execution.

An action says what happens when one fires: `stop` (the arm stops where it is), `hold` (the arm
keeps its last commanded pose), `open_gripper` (the execution's gripper opens), or an event
name such as `CONTACT` that ends the execution with that event.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from harness_types.execution import EVENTS
from harness_types.robot_state import RobotState

ACTIONS = ('stop', 'hold', 'open_gripper')
_EVENT_NAME = re.compile(r'^[A-Z][A-Z0-9_]{1,63}$')


def check_action(action: str) -> str:
    """`action` if valid, else ValueError saying what is allowed. The harness's own events
    (EPISODE_ENDED, SHIELD_REJECTED, ...) are not a guard's to name: each means something the
    harness measured."""
    if action in ACTIONS or (_EVENT_NAME.match(action or '') and action not in EVENTS):
        return action
    raise ValueError(
        f'guard action must be one of {", ".join(ACTIONS)} or an event name of your own in '
        f"CAPITALS (e.g. CONTACT; not one of the harness's: {', '.join(EVENTS)}), got "
        f'{str(action)[:100]!r}'
    )


@dataclass(frozen=True)
class Watch:
    """Fires when the named signal leaves [low, high]."""

    name: str
    signal: str
    low: float
    high: float
    action: str = 'stop'

    def __post_init__(self) -> None:
        check_action(self.action)
        if not self.low <= self.high:
            raise ValueError(f'watch {self.name!r}: low {self.low} is above high {self.high}')

    def check(self, signals: dict[str, float]) -> str | None:
        """None while inside; otherwise a sentence saying where the signal went."""
        if self.signal not in signals:
            known = ', '.join(sorted(signals))
            raise KeyError(f'watch {self.name!r}: unknown signal {self.signal!r}; signals: {known}')
        value = signals[self.signal]
        if value < self.low:
            return f'{self.signal} = {value:.4f} fell below {self.low}'
        if value > self.high:
            return f'{self.signal} = {value:.4f} rose above {self.high}'
        return None


@dataclass(frozen=True)
class Guard:
    """Fires when `predicate(observation)` is true."""

    name: str
    predicate: Callable[[RobotState], bool]
    action: str = 'stop'

    def __post_init__(self) -> None:
        check_action(self.action)


class GuardSet:
    """The program's active guards and watches, by name (a new one replaces its namesake)."""

    def __init__(self) -> None:
        self._items: dict[str, Guard | Watch] = {}

    def add(self, item: Guard | Watch) -> None:
        self._items[item.name] = item

    def clear(self, names: list[str] | None = None) -> list[str]:
        """Remove the named guards (all when None); returns the names removed."""
        if names is None:
            removed = list(self._items)
            self._items.clear()
            return removed
        unknown = [n for n in names if n not in self._items]
        if unknown:
            raise KeyError(
                f'no guard named {", ".join(map(repr, unknown))}; active: '
                f'{", ".join(self._items) or "none"}'
            )
        for n in names:
            del self._items[n]
        return list(names)

    def __iter__(self):
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)

    def names(self) -> list[str]:
        return list(self._items)
