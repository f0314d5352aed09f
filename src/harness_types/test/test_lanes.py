"""kernel/reactive_step's lanes with real rclpy nodes in a domain of their own: the answer comes
back, a call nobody answers times out, a missing or vanished service is said, a late answer to
a timed-out call is not taken for the next call's, a callback that raises does not stop the
service, and both lanes close."""

import threading
import time

import pytest
import rclpy
from harness_bringup.domain import claim_domain_id
from harness_types.lanes import LaneClient, LaneService, LaneUnavailableError
from rclpy.node import Node

from harness_msgs.srv import ReactiveStep


@pytest.fixture
def owners():
    claim = claim_domain_id()
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=claim.domain_id)
    server_owner = Node('lane_test_server', context=context)
    client_owner = Node('lane_test_client', context=context)
    try:
        yield server_owner, client_owner
    finally:
        server_owner.destroy_node()
        client_owner.destroy_node()
        rclpy.shutdown(context=context)
        claim.release()


def ready(client: LaneClient) -> LaneClient:
    deadline = time.monotonic() + 10
    while not client.service_is_ready():
        assert time.monotonic() < deadline, 'the lane service was never discovered'
        time.sleep(0.05)
    return client


def test_a_call_gets_its_own_answer_and_late_answers_are_dropped(owners):
    server_owner, client_owner = owners
    slow = threading.Event()
    slow.set()

    def answer(request, response):
        if slow.is_set():  # the first request: answered after its caller gave up
            slow.clear()
            time.sleep(0.5)
        response.guard_detail = f'answer to {request.execution_id}'
        return response

    service = LaneService('lane_server', server_owner, ReactiveStep, 'lane_test/step', answer)
    client = ready(LaneClient('lane_client', client_owner, ReactiveStep, 'lane_test/step'))
    try:
        with pytest.raises(TimeoutError):
            client.call(ReactiveStep.Request(execution_id='first'), timeout=0.15)
        time.sleep(0.6)  # the first answer arrives now, for a call that is over
        r = client.call(ReactiveStep.Request(execution_id='second'), timeout=5.0)
        assert r.guard_detail == 'answer to second'
        for k in range(20):
            r = client.call(ReactiveStep.Request(execution_id=str(k)), timeout=5.0)
            assert r.guard_detail == f'answer to {k}'
    finally:
        client.close()
        service.close()


def test_a_callback_that_raises_leaves_the_service_serving(owners):
    server_owner, client_owner = owners

    def answer(request, response):
        if request.execution_id == 'bad':
            raise RuntimeError('a bug')
        response.guard_fired = 'ok'
        return response

    service = LaneService('lane_server', server_owner, ReactiveStep, 'lane_test/raise', answer)
    client = ready(LaneClient('lane_client', client_owner, ReactiveStep, 'lane_test/raise'))
    try:
        with pytest.raises(TimeoutError):  # no answer to that one: its caller says so
            client.call(ReactiveStep.Request(execution_id='bad'), timeout=0.5)
        assert client.call(ReactiveStep.Request(execution_id='good'), timeout=5.0).guard_fired
    finally:
        client.close()
        started = time.monotonic()
        service.close()
        assert time.monotonic() - started < 5.0  # its thread ended


def test_no_service_means_not_ready_and_a_call_says_so(owners):
    _, client_owner = owners
    client = LaneClient('lane_client', client_owner, ReactiveStep, 'lane_test/nobody')
    try:
        assert not client.service_is_ready()
        with pytest.raises(LaneUnavailableError, match='lane_test/nobody is not available'):
            client.call(ReactiveStep.Request(), timeout=5.0)
    finally:
        client.close()


def test_a_service_that_leaves_while_a_call_waits_is_noticed_before_the_timeout(owners):
    """The graph is asked only when a wait slice passes without the answer: a service gone
    mid-call ends the call with LaneUnavailableError, not after its whole timeout."""
    server_owner, client_owner = owners
    answering, released = threading.Event(), threading.Event()
    answering.set()

    def answer(request, response):
        if not answering.is_set():
            released.wait(30)  # no answer while the service closes
        return response

    service = LaneService('lane_server', server_owner, ReactiveStep, 'lane_test/leaves', answer)
    client = ready(LaneClient('lane_client', client_owner, ReactiveStep, 'lane_test/leaves'))
    try:
        client.call(ReactiveStep.Request(), timeout=5.0)
        answering.clear()
        threading.Timer(0.3, service.close).start()
        with pytest.raises(LaneUnavailableError, match='left the graph before it answered'):
            client.call(ReactiveStep.Request(), timeout=60.0)
    finally:
        released.set()
        client.close()


def test_close_wakes_the_service_thread_without_waiting_out_its_slice(owners, monkeypatch):
    """close() triggers the lane's guard condition: a thread waiting on its wait set ends at
    once, not when the slice ends (each lane cost up to a slice at every episode's end)."""
    import harness_types.lanes as lanes

    monkeypatch.setattr(lanes, 'WAIT_SLICE_S', 60.0)  # a wait that outlasts close()'s join
    server_owner, _ = owners
    service = LaneService('lane_server', server_owner, ReactiveStep, 'lane_test/close', None)
    time.sleep(0.2)  # the thread is in its wait
    service.close()  # joins for CLOSE_WAIT_S at most
    assert not service._thread.is_alive()
