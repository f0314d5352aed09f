"""Waiting on a future that an executor spinning in another thread completes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


def wait_future(
    future, timeout: float, between: Callable[[], None] | None = None, poll: float = 0.05
) -> Any:
    """The future's result; TimeoutError when it is not done within `timeout` seconds.

    The thread sleeps until the future's done-callback wakes it. With `between`, it also wakes
    every `poll` seconds to call `between()` (the driver checks that the kernel still runs),
    which may raise to stop the wait; the result itself is not held back by `poll`. A waiting
    thread that has work of its own to serve uses `wait_future_serving`."""
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    deadline = time.monotonic() + timeout
    while not done.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f'no answer within {timeout:g} s')
        if between is None:
            done.wait(left)
            continue
        if not done.wait(min(left, poll)):
            between()
    return future.result()


def wait_future_serving(
    future, timeout: float, serve: Callable[[float], None], wake: Callable[[], None]
) -> Any:
    """The future's result, serving meanwhile: `serve(s)` does what is due and blocks at most
    `s` seconds for more; the future's done-callback calls `wake()` (from the executor's thread)
    to end that wait. TimeoutError when it is not done within `timeout` seconds. No polling:
    the kernel relays a reactive step the moment it arrives, and returns the moment the skill
    ends."""
    future.add_done_callback(lambda _f: wake())
    deadline = time.monotonic() + timeout
    while not future.done():
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f'no answer within {timeout:g} s')
        serve(min(left, 0.05))
    return future.result()


class InFlight:
    """How many of something run now (`with in_flight:` around each), and a wait until none
    does: the skill server's executions, the kernel's cells."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    @property
    def count(self) -> int:
        return self._count

    def __enter__(self) -> InFlight:
        with self._changed:
            self._count += 1
        return self

    def __exit__(self, *exc) -> None:
        with self._changed:
            self._count -= 1
            self._changed.notify_all()

    def wait_none(self, timeout: float) -> bool:
        """Whether none runs within `timeout` seconds (at once when none does)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._count == 0, timeout)
