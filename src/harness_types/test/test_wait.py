"""wait_future: woken by the future, `between` paced by `poll`, timeouts; wait_goal_result: a
lost result asked for again."""

import threading
import time
from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from harness_types.wait import (
    ResultExpiredError,
    ServerGoneError,
    presence_check,
    wait_future,
    wait_goal_result,
)


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


ENDED, RUNNING, UNKNOWN = (4, 5, 6), 2, 0  # GoalStatus: SUCCEEDED, CANCELED, ABORTED; ...


class LostFirstAnswer:
    """A goal handle whose first result request is never answered (its response was lost);
    later ones are, with the status `answer`."""

    def __init__(self, status: int, answer: int = 4) -> None:
        self.status, self.answer, self.requests = status, answer, 0

    def get_result_async(self) -> Future:
        self.requests += 1
        future = Future()
        if self.requests > 1:
            future.set_result(SimpleNamespace(status=self.answer, result='the result'))
        return future


def _serve(seconds: float) -> None:
    time.sleep(min(seconds, 0.01))


def test_a_goal_that_ended_without_its_result_is_asked_again():
    handle = LostFirstAnswer(status=4)
    response = wait_goal_result(handle, 5.0, _serve, lambda: None, ENDED, UNKNOWN, 0.05)
    assert response.result == 'the result' and handle.requests == 2


def test_a_goal_still_running_is_not_asked_again_and_the_wait_is_bounded():
    handle = LostFirstAnswer(status=RUNNING)
    with pytest.raises(TimeoutError):
        wait_goal_result(handle, 0.3, _serve, lambda: None, ENDED, UNKNOWN, 0.05)
    assert handle.requests == 1


def test_a_result_the_server_no_longer_has_is_an_error_not_an_empty_result():
    handle = LostFirstAnswer(status=4, answer=UNKNOWN)
    with pytest.raises(ResultExpiredError):
        wait_goal_result(handle, 5.0, _serve, lambda: None, ENDED, UNKNOWN, 0.05)


def test_serve_may_stop_the_wait():
    """The driver's serve looks whether the kernel still runs, and raises when it does not."""

    def gone(_seconds: float) -> None:
        raise RuntimeError('the kernel process ended')

    with pytest.raises(RuntimeError, match='kernel process ended'):
        wait_goal_result(LostFirstAnswer(status=RUNNING), 5.0, gone, lambda: None, ENDED, UNKNOWN)


def test_an_unknown_answer_waits_for_an_earlier_request_that_may_still_bring_the_result():
    """The re-ask reached the server after it dropped the result; the first answer was only
    slow: it wins. Once nothing more comes, the unknown answer is the error."""
    first = Future()

    class Slow(LostFirstAnswer):
        def get_result_async(self) -> Future:
            self.requests += 1
            if self.requests == 1:
                return first
            done = Future()
            done.set_result(SimpleNamespace(status=UNKNOWN, result=None))
            return done

    def serve(seconds: float) -> None:
        time.sleep(min(seconds, 0.01))
        if handle.requests == 2 and not first.done():
            first.set_result(SimpleNamespace(status=4, result='the result'))

    handle = Slow(status=4)
    assert wait_goal_result(handle, 5.0, serve, lambda: None, ENDED, UNKNOWN, 0.05).result == (
        'the result'
    )
    never = Slow(status=4)
    first = Future()  # never answered
    with pytest.raises(ResultExpiredError):
        wait_goal_result(never, 5.0, _serve, lambda: None, ENDED, UNKNOWN, 0.05)
    assert never.requests == 2  # no more asked once the server said it dropped it


def _goal_server(answers: list):
    """A goal request's sender whose n-th request is answered as answers[n] says: None never
    (lost), True accepted, False refused (the server had the goal id already)."""
    sent: list[Future] = []

    def send() -> Future:
        future = Future()
        answer = answers[len(sent)] if len(sent) < len(answers) else answers[-1]
        if answer is not None:
            future.set_result(SimpleNamespace(accepted=answer))
        sent.append(future)
        return future

    return send, sent


def test_a_goal_whose_request_was_lost_is_sent_again_and_taken():
    from harness_types.wait import wait_goal_taken

    send, sent = _goal_server([None, True])
    answer, taken_before = wait_goal_taken(send, 5.0, time.sleep, lambda: None, resend_s=0.05)
    assert answer.accepted and not taken_before and len(sent) == 2


def test_a_copy_refused_after_a_lost_answer_means_the_first_was_taken():
    """The server takes a goal id once: the first request's answer was lost, the copy is
    refused, so the goal runs (its result is what to wait for)."""
    from harness_types.wait import wait_goal_taken

    send, sent = _goal_server([None, False])
    answer, taken_before = wait_goal_taken(send, 5.0, time.sleep, lambda: None, resend_s=0.05)
    assert not answer.accepted and taken_before and len(sent) == 2
    send, sent = _goal_server([False])  # refused the first time: refused
    answer, taken_before = wait_goal_taken(send, 5.0, time.sleep, lambda: None, resend_s=0.05)
    assert not answer.accepted and not taken_before and len(sent) == 1


def test_a_goal_never_answered_times_out():
    from harness_types.wait import wait_goal_taken

    send, sent = _goal_server([None])
    with pytest.raises(TimeoutError):
        wait_goal_taken(send, 0.3, time.sleep, lambda: None, resend_s=0.1)
    assert 2 <= len(sent) <= 5


def test_a_server_that_leaves_the_graph_ends_the_wait_saying_so():
    """A station that died mid-execution: the wait for its result ends once its action server
    has been missing for gone_s, not at the execution's bound."""
    answers = iter([True, False, True, False, False, False, False])
    present = presence_check(lambda: next(answers, False), 'the server left', 0.05, 0.0)

    def serve(seconds: float) -> None:
        present()
        _serve(seconds)

    handle = LostFirstAnswer(status=RUNNING)
    with pytest.raises(ServerGoneError, match='the server left'):
        wait_goal_result(handle, 30.0, serve, lambda: None, ENDED, UNKNOWN, 0.05)


def test_a_server_is_asked_at_most_every_look_every_s():
    asked = []
    present = presence_check(lambda: asked.append(1) or True, 'gone', 3.0, 60.0)
    for _ in range(5):
        present()
    assert len(asked) == 1


def test_a_server_present_throughout_leaves_the_wait_to_its_bound():
    present = presence_check(lambda: True, 'the server left', 0.01, 0.0)
    with pytest.raises(TimeoutError):
        wait_future(Future(), 0.2, present, 0.01)
