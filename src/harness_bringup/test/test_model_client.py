"""The real `anthropic` client (harness_driver.models.AnthropicModel) against the local stand-in
Messages API server, without a graph: the ways a real service fails, each retried, bounded or
said as it should be."""

import time

import pytest
from harness_driver.models import AnthropicModel, Decision, ModelError, ModelRequest
from messages_server import MessagesServer, Scripted

from harness_driver import models

GOOD = Scripted('<finish>done</finish>')


def ask(
    server, monkeypatch, timeout=30.0, deadline_s=None, deadline_for=None, cut_s=None, cut_for=''
):
    monkeypatch.setenv('ANTHROPIC_API_KEY', 'test-key')
    monkeypatch.setenv('ANTHROPIC_BASE_URL', server.url)
    said: list[str] = []
    model = AnthropicModel('claude-sonnet-5-5', timeout, said.append)
    extra = {'deadline_for': deadline_for} if deadline_for else {}
    if cut_s is not None:
        extra |= {'cut': time.monotonic() + cut_s, 'cut_for': cut_for}
    deadline = time.monotonic() + deadline_s if deadline_s is not None else None
    request = ModelRequest(
        'system', [{'role': 'user', 'content': 'go'}], 64, Decision('start', 1), deadline, **extra
    )
    return model, request, said


@pytest.fixture
def quick_backoff(monkeypatch):
    monkeypatch.setattr(models, 'FIRST_WAIT_S', 0.05)


@pytest.mark.parametrize(
    'bad',
    [
        Scripted(raw=b'<html>502 Bad Gateway</html>', content_type='text/html'),
        Scripted(raw=b'{"type": "message", "content": [{"type": "text", "text": "hi"}]}'),
        Scripted(raw=b'{"type": "message", "content": "hi", "usage": {}}'),
        Scripted('hi', input_tokens=-1000000),
    ],
    ids=['a proxy page', 'no usage', 'content not a list', 'negative tokens'],
)
def test_a_malformed_answer_is_retried(bad, monkeypatch, quick_backoff):
    with MessagesServer([bad, GOOD]) as server:
        model, request, said = ask(server, monkeypatch)
        reply = model.complete(request)
    assert reply.text == '<finish>done</finish>' and len(server.requests) == 2
    assert len(said) == 1 and 'a malformed answer' in said[0], said


def test_a_retry_after_shorter_than_the_backoff_waits_the_backoff(monkeypatch, quick_backoff):
    now = Scripted(status=429, headers={'retry-after': '0'})
    with MessagesServer([now, now, now, GOOD]) as server:
        model, request, said = ask(server, monkeypatch)
        model.complete(request)
    waits = [line.rsplit(' in ', 1)[1] for line in said]
    assert waits == ['0.1 s', '0.1 s', '0.2 s'], said  # 0.05, 0.1, 0.2: not 0
    assert 'rate_limit_error: scripted' in said[0]  # the service's words, not its whole body


def test_the_backoff_does_not_overflow_after_many_attempts(monkeypatch):
    with MessagesServer([GOOD]) as server:
        model, request, _ = ask(server, monkeypatch, deadline_s=0.5)
    with pytest.raises(ModelError, match='2000 attempts') as exc:
        model._wait(request, 2000, 'no answer', None)
    assert exc.value.service


def test_a_request_ends_at_its_timeout_however_slowly_the_bytes_come(monkeypatch, quick_backoff):
    slow = Scripted('x' * 400, trickle=0.2)  # ~100 s for the whole body
    with MessagesServer([slow, GOOD]) as server:
        model, request, said = ask(server, monkeypatch, timeout=1.0)
        reply = model.complete(request)
    assert reply.text == '<finish>done</finish>', 'the slow answer was waited out'
    assert 'the request took longer than 1 s' in said[0], said


def test_a_request_ends_at_its_cut(monkeypatch):
    slow = Scripted('x' * 400, trickle=0.2)
    cell = "the program cell's time"
    with MessagesServer([slow]) as server:
        model, request, _ = ask(
            server, monkeypatch, deadline_s=1.0, deadline_for=cell, cut_s=1.0, cut_for=cell
        )
        with pytest.raises(ModelError, match="the program cell's time leaves no time") as exc:
            model.complete(request)
    assert exc.value.service and len(server.requests) == 1
    assert "all that the program cell's time left" in str(exc.value), exc.value


def test_a_soft_deadline_before_the_cut_does_not_lift_the_cut(monkeypatch):
    """A verify() late in the episode: the wall budget (no new attempt after it) comes first,
    and the verifier's own bound still cuts the request in flight, not the client's timeout."""
    slow = Scripted('x' * 400, trickle=0.2)  # ~100 s for the whole body
    bound = "the verifier's bound"
    with MessagesServer([slow]) as server:
        model, request, _ = ask(
            server, monkeypatch, 30.0, 0.5, 'the budget', cut_s=1.5, cut_for=bound
        )
        with pytest.raises(ModelError, match='the budget leaves no time') as exc:
            model.complete(request)
    assert "longer than 1 s, all that the verifier's bound left" in str(exc.value), exc.value


def test_an_answer_that_no_byte_begins_is_said_with_its_time(monkeypatch, quick_backoff):
    with MessagesServer([Scripted('late', delay=5.0), GOOD]) as server:
        model, request, said = ask(server, monkeypatch, timeout=1.0)
        reply = model.complete(request)
    assert reply.text == '<finish>done</finish>'
    assert said[0].startswith('the model service gave no answer (the request took longer than 1 s)')


def test_an_answer_with_a_lone_surrogate_is_malformed_and_retried(monkeypatch, quick_backoff):
    """JSON's \\ud800 escape decodes to text that no later request could carry (the reply is
    resent in the history): the service's malformed answer, not the harness's error."""
    with MessagesServer([Scripted('one \ud800 two'), GOOD]) as server:
        model, request, said = ask(server, monkeypatch)
        reply = model.complete(request)
    assert reply.text == '<finish>done</finish>' and len(server.requests) == 2
    assert "a lone surrogate '\\ud800' at character 4" in said[0], said


def test_a_request_that_cannot_be_encoded_is_not_blamed_on_the_service(monkeypatch):
    with MessagesServer([GOOD]) as server:
        model, request, said = ask(server, monkeypatch)
        bad = ModelRequest(
            'system', [{'role': 'user', 'content': 'a \ud800'}], 64, request.decision
        )
        with pytest.raises(ModelError, match='the request could not be sent') as exc:
            model.complete(bad)
    assert not exc.value.service and not server.requests and not said


def test_a_refused_key_after_answers_is_not_a_setup_error(monkeypatch):
    with MessagesServer([GOOD, Scripted(status=401)]) as server:
        model, request, _ = ask(server, monkeypatch)
        model.complete(request)
        with pytest.raises(ModelError, match='refused the key') as exc:
            model.complete(request)
    assert not exc.value.setup  # exit 2 is for set-up problems, before any answer


@pytest.mark.parametrize('status', [408, 409])
def test_a_request_timeout_or_conflict_is_retried(status, monkeypatch, quick_backoff):
    with MessagesServer([Scripted(status=status), GOOD]) as server:
        model, request, said = ask(server, monkeypatch)
        reply = model.complete(request)
    assert reply.text == '<finish>done</finish>' and len(server.requests) == 2
    assert said[0].startswith(f'the model service gave {status} '), said


def test_a_retry_after_past_the_budget_is_said(monkeypatch):
    later = Scripted(status=429, headers={'retry-after': '100'})
    with MessagesServer([later]) as server:
        model, request, _ = ask(server, monkeypatch, deadline_s=5.0, deadline_for='the budget')
        with pytest.raises(
            ModelError, match=r'leaves no time for another \(the server asked to wait 100 s\)'
        ):
            model.complete(request)


def test_a_server_reached_before_that_refuses_the_first_request_is_retried(
    monkeypatch, quick_backoff
):
    """The probe before the graph reached the server; its first request then met a refused
    connection (the server restarting): the service's failure, retried, not a set-up error."""
    with MessagesServer([GOOD]) as server:
        model, request, said = ask(server, monkeypatch)
        model.probe()
    # the server is gone: its address refuses connections until one listens there again
    with pytest.raises(ModelError) as exc:
        model.complete(
            ModelRequest(
                'system',
                [{'role': 'user', 'content': 'go'}],
                64,
                Decision('start', 1),
                time.monotonic() + 2.5,
                deadline_for='the budget',
            )
        )
    assert exc.value.service and not exc.value.setup, exc.value
    assert said and 'no answer' in said[0], said
    # never reached: the first refused connection is a set-up problem, said in one line
    fresh, request, _ = ask(server, monkeypatch)
    with pytest.raises(ModelError, match='cannot reach the model server') as exc:
        fresh.complete(request)
    assert exc.value.setup
