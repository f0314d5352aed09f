"""kernel/reactive_step's own lane at both ends: a node with one entity and a single-threaded
executor in a thread of its own (the skill server's client, the kernel's service).

The call is made every tick while program code is active, so its round trip is the tick's
largest cost. On the multi-threaded executor of a node with dozens of entities (the skill
server has an action server per skill, the kernel an action client per skill) every wake-up
rebuilds a large wait set in Python and hands the callback to a pool thread: 3.2 ms went from
the kernel's answer to the skill server's waiting thread, 1.8 ms from the request to the
kernel's callback (perf/skills.py's tick, timed in both processes). Here the wait set is one
entity and the callback runs on the spinning thread. rclpy's EventsExecutor was tried first: in
this rclpy a service round trip between two processes on it did not complete (the spinning
thread at 100% CPU).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.task import Future


class ReactiveLane:
    """A node named `name` in `owner`'s namespace and context with a single-threaded executor
    of its own. A serving lane (the kernel's service) spins it in a thread of its own; a calling
    lane (the skill server's client) is spun by the thread that waits for the answer
    (`wait`), so the response completes the call on that thread: rclpy schedules a future's
    done-callbacks as executor tasks, which would cost another executor round before the
    waiting thread heard of it. `close()` stops it."""

    def __init__(self, name: str, owner: Node, serve: bool) -> None:
        # Not the process's global arguments: a launch file's `name=` is a global node-name
        # remap that would give this node its owner's name too.
        self.node = Node(
            name,
            namespace=owner.get_namespace(),
            context=owner.context,
            use_global_arguments=False,
            start_parameter_services=False,
        )
        self._executor = SingleThreadedExecutor(context=owner.context)
        self._executor.add_node(self.node)
        self._waiting = threading.Lock()
        self._thread: threading.Thread | None = None
        if serve:
            self._thread = threading.Thread(target=self._spin, name=name, daemon=True)
            self._thread.start()

    def _spin(self) -> None:
        with contextlib.suppress(ExternalShutdownException):  # the context was shut down
            self._executor.spin()

    def wait(self, future: Future, timeout: float) -> Any:
        """A calling lane: spin here until `future` is done; its result. TimeoutError after
        `timeout` seconds. One waiting thread at a time (others queue)."""
        deadline = time.monotonic() + timeout
        with self._waiting:
            while not future.done():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f'no answer within {timeout:g} s')
                self._executor.spin_once(timeout_sec=min(left, 0.1))
        return future.result()

    def close(self) -> None:
        self._executor.shutdown(timeout_sec=2.0)
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        self.node.destroy_node()
