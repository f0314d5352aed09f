"""A service with a node of its own at each end, waited on directly with an rcl wait set
instead of an executor (`LaneClient` at the caller, `LaneService` at the server): the services
called every tick or many times a skill (the worker's tick and reads, kernel/reactive_step, the
skill server's reads).

Such a call's round trip is a tick's largest cost. On the multi-threaded executor of a node
with dozens of entities (the skill server has an action server per skill, the kernel an action
client per skill) every wake-up rebuilds a large wait set in Python and hands the callback to a
pool thread: 3.2 ms went from the kernel's answer to the skill server's waiting thread and
1.8 ms from the request to the kernel's callback (perf/skills.py's guarded tick, timed in both
processes). A single-threaded executor on a node of its own took that to 0.5 and 0.7 ms; most
of what was left was the executor's own machinery (a wait set rebuilt from the node's entities,
a task per callback, a done-callback scheduled as another task). Here each end waits on a wait
set of its one entity and takes the request or response itself, as rclpy's executors do inside
(`_rclpy.WaitSet`, `take_response`, `service_take_request`; `rclpy.wait_for_message` waits the
same way). rclpy's EventsExecutor was tried first: in this rclpy a service round trip between
two processes on it did not complete (the spinning thread at 100% CPU).
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.node import Node
from rclpy.parameter import Parameter

WAIT_SLICE_S = 0.1  # a call's wait is cut into slices this long, to notice the service leave
# A service's wait for a request: it also ends at close() (a guard condition), so a long slice
# only bounds how late a context shut down without close() is noticed. Waits of 0.1 s held
# each of a station's lanes at ~0.2% of a core between requests.
SERVE_SLICE_S = 1.0
CLOSE_WAIT_S = 1.2  # how long LaneService.close() waits for a callback still running


def _lane_node(name: str, owner: Node) -> Node:
    """A bare node in `owner`'s namespace and context. Not the process's global arguments: a
    launch file's `name=` is a global node-name remap that would give it its owner's name.
    Nothing spins it, so it offers no services of its own (parameters, type descriptions)."""
    return Node(
        name,
        namespace=owner.get_namespace(),
        context=owner.context,
        use_global_arguments=False,
        start_parameter_services=False,
        parameter_overrides=[Parameter('start_type_description_service', value=False)],
    )


def _ready(context: Any, handle: Any, kind: str, seconds: float, wake: Any = None) -> bool:
    """Whether the one client or service behind `handle` has something to take, waiting at
    most `seconds` for it (`kind`: 'client' or 'service'), or until the guard condition
    `wake` (a handle, optional) is triggered."""
    with handle, context.handle, wake if wake is not None else contextlib.nullcontext():
        client = kind == 'client'
        guards = int(wake is not None)
        wait_set = _rclpy.WaitSet(0, guards, 0, int(client), int(not client), 0, context.handle)
        wait_set.clear_entities()
        (wait_set.add_client if client else wait_set.add_service)(handle)
        if wake is not None:
            wait_set.add_guard_condition(wake)
        wait_set.wait(int(seconds * 1e9))
        return handle.pointer in wait_set.get_ready_entities(kind)


class LaneUnavailableError(ConnectionError):
    """No service answers the lane: none was there when a call began, or it left the graph
    while the call waited."""


class LaneClient:
    """A service client on a node of its own; `call` sends a request and waits for its answer
    on the calling thread. One call at a time (others queue)."""

    def __init__(self, name: str, owner: Node, srv_type: Any, srv_name: str) -> None:
        self.node = _lane_node(name, owner)
        self.client = self.node.create_client(srv_type, srv_name)
        self.srv_name = self.client.srv_name
        self._calling = threading.Lock()
        # Asking the graph whether the service is there costs ~0.1 ms, as much as a tenth of
        # the round trip: it is asked before a call only until the service has been seen, and
        # then only when a wait slice passes without the answer.
        self._seen = False

    def service_is_ready(self) -> bool:
        return self.client.service_is_ready()

    def wait_for_service(self, timeout: float) -> bool:
        """Whether the service appears within `timeout` seconds. Asked every 10 ms: rclpy's
        Client.wait_for_service sleeps 0.25 s between looks, which an episode's first calls
        would wait out."""
        deadline = time.monotonic() + timeout
        while not self.service_is_ready():
            if time.monotonic() > deadline or not self.node.context.ok():
                return False
            time.sleep(0.01)
        return True

    def call(
        self, request: Any, timeout: float, resend_s: float | None = None, wait_s: float = 0.0
    ) -> Any:
        """The response to `request`; TimeoutError after `timeout` seconds, and
        LaneUnavailableError when no service is there (or it goes while the call waits). A
        late answer to an earlier call that timed out is dropped (its sequence number is not
        this call's). `resend_s`, for a service that only reads: the request is sent again
        each time that long passes without its answer (a request or its answer lost while a
        process was stopped past its DDS lease); the first answer to any of them is taken.
        `wait_s`: how long a service not seen yet (or seen to leave) is waited for before the
        request is sent; a request sent before the service is discovered would be lost. (The
        `timeout` counts from then, after any call before this one on the lane.)"""
        context = self.node.context
        with self._calling:
            if not self._seen:
                if not self.wait_for_service(wait_s):
                    raise LaneUnavailableError(f'{self.srv_name} is not available')
                self._seen = True
            deadline = time.monotonic() + timeout
            handle = self.client.handle
            with handle:
                sequences = {handle.send_request(request)}
            sent = time.monotonic()
            while True:
                now = time.monotonic()
                left = deadline - now
                if left <= 0 or not context.ok():
                    raise TimeoutError(f'no answer within {timeout:g} s')
                if resend_s is not None and now - sent >= resend_s:
                    with handle:
                        sequences.add(handle.send_request(request))
                    sent = now
                if not _ready(context, handle, 'client', min(left, WAIT_SLICE_S)):
                    if not self.client.service_is_ready():
                        self._seen = False
                        raise LaneUnavailableError(
                            f'{self.srv_name} left the graph before it answered'
                        )
                    continue
                with handle:
                    header, response = handle.take_response(self.client.srv_type.Response)
                if header is not None and header.request_id.sequence_number in sequences:
                    return response

    def close(self) -> None:
        self.node.destroy_node()


class LaneService:
    """A service on a node of its own, served by a thread of its own: each request is taken,
    answered by `callback(request, response)` on that thread, and its response sent."""

    def __init__(
        self,
        name: str,
        owner: Node,
        srv_type: Any,
        srv_name: str,
        callback: Callable[[Any, Any], Any],
    ) -> None:
        self.node = _lane_node(name, owner)
        self.service = self.node.create_service(srv_type, srv_name, callback)
        self._stopping = threading.Event()
        # close() wakes the thread's wait at once: waiting out its slice cost each lane up to
        # 0.1 s, one after another (the skill server's five: ~0.2 s of every episode's end).
        self._wake = self.node.create_guard_condition(lambda: None)
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        context, service = self.node.context, self.service
        handle = service.handle
        while not self._stopping.is_set() and context.ok():
            try:
                if not _ready(context, handle, 'service', SERVE_SLICE_S, self._wake.handle):
                    continue
                with handle:
                    request, header = handle.service_take_request(service.srv_type.Request)
            except Exception:
                if self._stopping.is_set() or not context.ok():  # closed: the lane ends
                    return
                # A failed take must not end the lane: its service would stay in the graph and
                # every later call would wait out its timeout.
                self.node.get_logger().error(
                    f'{service.srv_name}: taking a request failed:\n{traceback.format_exc()}'
                )
                time.sleep(WAIT_SLICE_S)
                continue
            if header is None:
                continue
            try:
                response = service.callback(request, service.srv_type.Response())
                if self._stopping.is_set():  # closed while it ran: the node may be gone
                    return
                service.send_response(response, header)
            except Exception:  # a bug in the callback: say it, keep serving (its caller times out)
                self.node.get_logger().error(
                    f'{service.srv_name} failed:\n{traceback.format_exc()}'
                )

    def close(self) -> None:
        self._stopping.set()
        self._wake.trigger()
        self._thread.join(timeout=CLOSE_WAIT_S)
        self.node.destroy_node()
