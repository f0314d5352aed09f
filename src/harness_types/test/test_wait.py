"""wait_future: woken by the future, `between` paced by `poll`, timeouts."""

import threading
from concurrent.futures import Future

import pytest
from harness_types.wait import wait_future


def test_a_done_future_returns_without_calling_between():
    future = Future()
    future.set_result(7)
    calls = []
    assert wait_future(future, 5.0, between=lambda: calls.append(1), poll=10.0) == 7
    assert calls == []


def test_the_done_callback_wakes_the_wait_before_the_next_poll():
    """A poll of an hour: the result comes from the done-callback, not from polling."""
    future = Future()
    threading.Timer(0.05, future.set_result, args=('answer',)).start()
    assert wait_future(future, 30.0, between=lambda: None, poll=3600.0) == 'answer'


def test_between_is_called_while_waiting_and_may_stop_the_wait():
    future = Future()
    calls = []

    def check():
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError('the kernel is gone')

    with pytest.raises(RuntimeError, match='the kernel is gone'):
        wait_future(future, 30.0, between=check, poll=0.001)
    assert len(calls) == 3


@pytest.mark.parametrize('between', [None, lambda: None])
def test_a_future_never_done_times_out(between):
    with pytest.raises(TimeoutError, match='no answer within 0.05 s'):
        wait_future(Future(), 0.05, between=between, poll=0.01)


def test_the_future_s_exception_is_raised():
    future = Future()
    future.set_exception(ValueError('refused'))
    with pytest.raises(ValueError, match='refused'):
        wait_future(future, 1.0)


def test_in_flight_counts_what_runs_and_waits_until_none_does():
    from harness_types.wait import InFlight

    in_flight = InFlight()
    assert in_flight.count == 0 and in_flight.wait_none(0.0)
    with in_flight, in_flight:
        assert in_flight.count == 2
        assert not in_flight.wait_none(0.02)
    assert in_flight.count == 0
    # a waiter wakes when the last one leaves
    in_flight.__enter__()
    threading.Timer(0.05, in_flight.__exit__, (None, None, None)).start()
    assert in_flight.wait_none(30.0)
    with pytest.raises(ValueError), in_flight:  # what runs may fail: it is counted out
        raise ValueError
    assert in_flight.count == 0
