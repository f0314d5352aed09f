"""Waiting on a future that an executor spinning in another thread completes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from typing import Any


def wait_future(
    future, timeout: float, between: Callable[[], None] | None = None, poll: float = 0.05
) -> Any:
    """The future's result; TimeoutError when it is not done within `timeout` seconds.

    The thread sleeps until the future's done-callback wakes it. With `between`, it also wakes
    every `poll` seconds to call `between()` (the driver checks that the kernel still runs),
    which may raise to stop the wait; the result itself is not held back by `poll`. A waiting
    thread that has work of its own to serve waits with `serve` and `wake` (wait_goal_taken,
    wait_goal_result)."""
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


# How long after the server says a goal has ended its result is waited for before it is asked
# for again (the answer to the first request was lost).
RESULT_CHECK_S = 2.0
# How long a goal request waits for its answer before the same goal (the same goal id) is sent
# again: a request, or its answer, is lost when a process was stopped past its DDS lease (a
# suspended machine, a SIGSTOP of 20 s) and the other side dropped it meanwhile.
GOAL_RESEND_S = 5.0


def wait_goal_taken(
    send: Callable[[], Any],
    timeout: float,
    serve: Callable[[float], None],
    wake: Callable[[], None],
    resend_s: float = GOAL_RESEND_S,
) -> tuple[Any, bool]:
    """(The answer to a goal request, whether the server had taken the goal already) within
    `timeout` seconds (TimeoutError past it). `send()` sends the goal (rclpy's send_goal_async,
    the same goal id every time) and returns its future; it is sent again every `resend_s`
    seconds while no answer came. An action server takes a goal id once: a copy is refused,
    never run twice, so a refused copy sent after an unanswered first request means the first
    was taken (for a server that refuses no goal of its own accord); its result is the
    goal's. `serve(s)` does what is due and blocks at most `s` seconds for more; a request's
    done-callback calls `wake()` (from the executor's thread) to end that wait: the kernel
    relays a reactive step the moment it arrives."""
    deadline = time.monotonic() + timeout
    sent: list = []
    last = 0.0
    while True:
        now = time.monotonic()
        if now - last >= resend_s or not sent:
            future = send()
            future.add_done_callback(lambda _f: wake())
            sent.append(future)
            last = now
        answers = [f.result() for f in sent if f.done()]
        taken = next((a for a in answers if a.accepted), None)
        if taken is not None:
            return taken, False
        if answers:
            return answers[0], len(sent) > 1
        if now >= deadline:
            raise TimeoutError(f'no answer within {timeout:g} s')
        serve(min(deadline - now, last + resend_s - now, 0.05))


class ResultExpiredError(RuntimeError):
    """The server no longer had the result of a goal it ended (answered with the unknown
    status: its answer was lost and the result expired)."""


def wait_goal_result(
    handle,
    timeout: float,
    serve: Callable[[float], None],
    wake: Callable[[], None],
    ended: Collection[int],
    unknown: int,
    recheck_s: float = RESULT_CHECK_S,
) -> Any:
    """The result response of an action goal (rclpy's ClientGoalHandle: `get_result_async`,
    `status`) within `timeout` seconds (TimeoutError past it). A goal the server says has ended
    (its status in `ended`) whose result has not come within `recheck_s` (a lost response) is
    asked for its result again; every request asked stays awaited. An answer with the
    `unknown` status (the server no longer had the result: it was dropped before a request
    reached it) is passed over for `recheck_s` while an earlier request may still bring the
    result, and no more are asked; then ResultExpiredError, never an empty result taken for
    the goal's. `serve(s)` blocks at most `s` seconds (doing the waiting thread's own work, or
    looking whether to give up: it may raise), and `wake()`, called from a request's
    done-callback, ends such a block."""
    deadline = time.monotonic() + timeout
    futures, ended_since, expired_since = [], None, None

    def ask() -> None:
        future = handle.get_result_async()
        future.add_done_callback(lambda _f: wake())
        futures.append(future)

    ask()
    while True:
        answers = [f.result() for f in futures if f.done()]
        known = next((r for r in answers if r.status != unknown), None)
        if known is not None:
            return known
        now = time.monotonic()
        if answers and expired_since is None:
            expired_since = now
        if expired_since is not None and (
            len(answers) == len(futures) or now - expired_since >= recheck_s
        ):
            raise ResultExpiredError('the server no longer had the result of the goal it ended')
        if now >= deadline:
            raise TimeoutError(f'no result within {timeout:g} s')
        # (once the server has said it dropped the result, asking again is of no use)
        if expired_since is None:
            if handle.status not in ended:
                ended_since = None
            elif ended_since is None:
                ended_since = now
            elif now - ended_since >= recheck_s:
                ask()
                ended_since = None
        serve(min(deadline - now, 0.05))


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


# How long a running goal's action server may be missing from the graph before the wait is
# given up: a station whose process died leaves the graph when its DDS lease runs out, and the
# execution's own bound (a minute or more) would be waited out for nothing.
SERVER_GONE_S = 3.0


class ServerGoneError(RuntimeError):
    """The server waited on left the graph (presence_check)."""


def presence_check(
    present: Callable[[], bool],
    gone: str,
    gone_s: float = SERVER_GONE_S,
    look_every_s: float = 0.5,
) -> Callable[[], None]:
    """A check to call while waiting on a server (wait_future's `between`, wait_goal_result's
    `serve`, which a kernel calls many times a second): it asks `present()` (a client's
    service_is_ready, server_is_ready) at most every `look_every_s` seconds and raises
    ServerGoneError(`gone`) once that has said no for `gone_s` seconds on end."""
    missing_since: float | None = None
    looked = -look_every_s

    def check() -> None:
        nonlocal missing_since, looked
        now = time.monotonic()
        if now - looked < look_every_s:
            return
        looked = now
        if present():
            missing_since = None
        elif missing_since is None:
            missing_since = now
        elif now - missing_since >= gone_s:
            raise ServerGoneError(gone)

    return check
