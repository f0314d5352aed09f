"""PolicyServer and PolicyClient over real sockets: metadata, per-connection policies, every way
a request can fail (each a PolicyError naming the url), and /healthz."""

import http.client
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from harness_policy.client import PolicyClient, PolicyError
from harness_policy.observation import reply_of
from harness_policy.server import PolicyServer
from websockets.sync.client import connect

METADATA = {'name': 'counter', 'action_horizon': 10, 'cameras': ['cam_head']}


class Counter:
    """Answers a chunk of the state plus the number of calls on its connection; fails, answers
    a non-dict, or waits on an event when the observation asks."""

    entered = threading.Event()
    release = threading.Event()

    def __init__(self) -> None:
        self.calls = 0

    def infer(self, obs: dict) -> dict:
        self.calls += 1
        if obs.get('fail'):
            raise ValueError('told to fail')
        if obs.get('not_a_dict'):
            return [1, 2]  # type: ignore[return-value]
        if obs.get('wait_s'):
            Counter.entered.set()
            Counter.release.wait(obs['wait_s'])
        state = np.asarray(obs['observation/state'], dtype=np.float32)
        return {'actions': np.tile(state, (10, 1)) + self.calls, 'calls': self.calls}


def _obs(**extra: object) -> dict:
    return {'observation/state': np.zeros(14, np.float32), 'prompt': 'count', **extra}


@pytest.fixture
def server() -> Iterator[PolicyServer]:
    Counter.entered.clear()
    Counter.release.clear()
    server = PolicyServer(Counter, METADATA)
    server.start()
    yield server
    Counter.release.set()  # a policy left waiting must not hold stop() up
    server.stop()


def test_metadata_on_connect_and_a_chunk(server: PolicyServer) -> None:
    assert server.url == f'ws://127.0.0.1:{server.port}'
    with PolicyClient(server.url) as client:
        assert client.metadata == METADATA
        state = np.arange(14, dtype=np.float32)
        answer = client.infer(_obs(**{'observation/state': state}))
    reply = reply_of(answer)
    assert reply.actions.shape == (10, 14)
    np.testing.assert_array_equal(reply.actions, np.tile(state, (10, 1)) + 1)
    assert answer['actions'].dtype == np.float32


def test_each_connection_has_its_own_policy(server: PolicyServer) -> None:
    with PolicyClient(server.url) as a, PolicyClient(server.url) as b:
        assert [a.infer(_obs())['calls'] for _ in range(3)] == [1, 2, 3]
        assert [b.infer(_obs())['calls'] for _ in range(2)] == [1, 2]
        assert a.infer(_obs())['calls'] == 4


def test_an_error_in_infer_reaches_the_client_and_the_server_serves_on(
    server: PolicyServer,
) -> None:
    client = PolicyClient(server.url)
    with pytest.raises(PolicyError, match='told to fail') as raised:
        client.infer(_obs(fail=True))
    assert server.url in str(raised.value)
    assert 'ValueError' in str(raised.value)
    with pytest.raises(PolicyError, match='unusable.*told to fail'):
        client.infer(_obs())
    with PolicyClient(server.url) as again:
        assert again.infer(_obs())['calls'] == 1


def test_a_reply_that_is_not_a_dict(server: PolicyServer) -> None:
    with (
        PolicyClient(server.url) as client,
        pytest.raises(PolicyError, match='answered a list, not a dict'),
    ):
        client.infer(_obs(not_a_dict=True))


def test_raw_frames_see_openpis_protocol(server: PolicyServer) -> None:
    # What an openpi client sees: metadata first, then an error as a text frame and 1011.
    with connect(server.url, compression=None, max_size=None) as ws:
        assert isinstance(ws.recv(timeout=5), bytes)
        ws.send(b'\xc1')
        text = ws.recv(timeout=5)
        assert isinstance(text, str)
        assert text.startswith('malformed request: the message is not valid msgpack')
        ws.recv_events_thread.join(5)
        assert ws.close_code == 1011


def test_a_frame_over_the_bound_is_refused_before_it_is_held(monkeypatch) -> None:
    """A 300 MB frame was read whole (max_size=None): the server now closes a connection whose
    frame passes MAX_OBSERVATION_BYTES (1009, message too big) and serves on."""
    import harness_policy.server as server_module

    monkeypatch.setattr(server_module, 'MAX_OBSERVATION_BYTES', 2**20)
    with PolicyServer(Counter, METADATA) as bounded:
        with connect(bounded.url, compression=None, max_size=None) as ws:
            ws.recv(timeout=5)
            ws.send(b'\x00' * (2 * 2**20))
            ws.recv_events_thread.join(5)
            assert ws.close_code == 1009
        with PolicyClient(bounded.url) as client:
            assert client.infer(_obs())['calls'] == 1


def test_a_text_request_is_malformed(server: PolicyServer) -> None:
    with connect(server.url, compression=None) as ws:
        ws.recv(timeout=5)
        ws.send('hello')
        assert 'text frame' in ws.recv(timeout=5)


def test_stopping_the_server_while_a_client_waits(server: PolicyServer) -> None:
    client = PolicyClient(server.url, timeout_s=30.0)
    failure: list[BaseException] = []

    def call() -> None:
        try:
            client.infer(_obs(wait_s=30.0))
        except BaseException as exc:
            failure.append(exc)

    waiting = threading.Thread(target=call)
    waiting.start()
    assert Counter.entered.wait(10)
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    waiting.join(10)
    Counter.release.set()
    stopper.join(10)
    assert not waiting.is_alive()
    assert len(failure) == 1 and isinstance(failure[0], PolicyError)
    assert 'closed the connection while a reply was awaited (code 1001' in str(failure[0])


def test_connection_refused_names_the_url() -> None:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    url = f'ws://127.0.0.1:{port}'
    with pytest.raises(PolicyError, match=f'cannot connect to the policy server at {url}: '):
        PolicyClient(url, open_timeout_s=2.0)


def test_not_a_websocket_url() -> None:
    with pytest.raises(PolicyError, match='not a websocket url'):
        PolicyClient('http://127.0.0.1:1')


def test_no_reply_within_the_timeout(server: PolicyServer) -> None:
    client = PolicyClient(server.url, timeout_s=0.3)
    with pytest.raises(PolicyError, match=r'did not send a reply within 0\.3 s') as raised:
        client.infer(_obs(wait_s=30.0))
    assert server.url in str(raised.value)
    with pytest.raises(PolicyError, match='unusable'):
        client.infer(_obs())


def test_a_closed_client_says_so(server: PolicyServer) -> None:
    client = PolicyClient(server.url)
    client.close()
    client.close()
    with pytest.raises(PolicyError, match='unusable: it was closed'):
        client.infer(_obs())


def test_an_unsendable_observation(server: PolicyServer) -> None:
    with (
        PolicyClient(server.url) as client,
        pytest.raises(PolicyError, match='cannot send this observation'),
    ):
        client.infer({'x': np.zeros(2, np.complex64)})


def test_healthz(server: PolicyServer) -> None:
    conn = http.client.HTTPConnection('127.0.0.1', server.port, timeout=5)
    try:
        conn.request('GET', '/healthz')
        response = conn.getresponse()
        assert response.status == 200
        assert response.read() == b'OK\n'
    finally:
        conn.close()


def test_a_factory_that_fails_is_reported() -> None:
    def broken() -> Counter:
        raise RuntimeError('no weights')

    with PolicyServer(broken, {}) as server, pytest.raises(PolicyError, match='no weights'):
        PolicyClient(server.url)


def test_stop_is_idempotent_and_frees_the_port() -> None:
    server = PolicyServer(Counter, METADATA)
    port = server.start()
    server.stop()
    server.stop()
    with pytest.raises(PolicyError, match='cannot connect'):
        PolicyClient(f'ws://127.0.0.1:{port}', open_timeout_s=2.0)


def test_close_from_another_thread_ends_a_waiting_call(server: PolicyServer) -> None:
    client = PolicyClient(server.url, timeout_s=30.0)
    failure: list[BaseException] = []

    def call() -> None:
        try:
            client.infer(_obs(wait_s=30.0))
        except BaseException as exc:
            failure.append(exc)

    waiting = threading.Thread(target=call)
    waiting.start()
    assert Counter.entered.wait(10)
    client.close()
    waiting.join(10)
    assert not waiting.is_alive()
    assert len(failure) == 1 and isinstance(failure[0], PolicyError)
    assert 'was closed while a reply was awaited' in str(failure[0])


SERVE_FOREVER = """
import faulthandler, signal, threading, time
faulthandler.register(signal.SIGUSR1)  # the test asks for the stacks if the child hangs
from harness_policy.server import PolicyServer

class Nothing:
    def infer(self, obs):
        return {}

server = PolicyServer(Nothing, {'name': 'cli'})
port = server.start()

def announce():
    # The port once serve_forever took both signals (SIGTERM last): a signal the test sends
    # earlier would find Python's default and say nothing of serve_forever.
    while signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        time.sleep(0.01)
    print(port, flush=True)

threading.Thread(target=announce, daemon=True).start()
server.serve_forever()
print('stopped', flush=True)
"""


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT])
def test_serve_forever_stops_cleanly_on_a_signal(signum: int) -> None:
    child = subprocess.Popen(
        [sys.executable, '-c', SERVE_FOREVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = int(child.stdout.readline())
        with PolicyClient(f'ws://127.0.0.1:{port}') as client:
            assert client.metadata == {'name': 'cli'}
        child.send_signal(signum)
        try:
            out, err = child.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGUSR1)  # its threads' stacks, to say where it hangs
            time.sleep(1.0)
            child.kill()
            out, err = child.communicate()
            pytest.fail(f'the server did not stop on signal {signum}; its stacks:\n{err}')
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    assert out.strip() == 'stopped'


def test_a_policy_with_close_is_closed_when_its_connection_ends():
    closed = threading.Event()

    class Closing:
        def infer(self, obs):
            return {'actions': np.zeros((1, 14))}

        def close(self):
            closed.set()

    with PolicyServer(Closing, {'name': 'closing'}) as server:
        client = PolicyClient(server.url, timeout_s=5.0)
        client.infer({'prompt': 'x'})
        assert not closed.is_set()
        client.close()
        assert closed.wait(5.0)


def test_a_server_that_floods_or_rambles_is_refused_with_a_clear_error():
    class Flood:
        def infer(self, obs):
            return {'actions': np.zeros((1, 14)), 'junk': np.zeros(3 * 2**20)}  # 24 MB

    with PolicyServer(Flood, {'name': 'flood'}) as server:
        client = PolicyClient(server.url, timeout_s=10.0)
        with pytest.raises(PolicyError, match='it sent a message over 16 MiB'):
            client.infer({'prompt': 'x'})

    class Ramble:
        def infer(self, obs):
            raise ValueError('x' * 10_000)

    with PolicyServer(Ramble, {'name': 'ramble'}) as server:
        client = PolicyClient(server.url, timeout_s=10.0)
        with pytest.raises(PolicyError) as caught:
            client.infer({'prompt': 'x'})
        assert '[clipped]' in str(caught.value) and len(str(caught.value)) < 700


def test_connections_past_the_bound_are_refused_and_the_server_serves_on(monkeypatch) -> None:
    """Each connection holds a thread, a policy and descriptors: past MAX_CONNECTIONS one more
    is answered 503 before its handshake (a flood of idle clients had run the process out of
    descriptors), and once one ends a new one is served."""
    import harness_policy.server as server_module
    from websockets.exceptions import InvalidStatus

    monkeypatch.setattr(server_module, 'MAX_CONNECTIONS', 2)
    with PolicyServer(Counter, METADATA) as bounded:
        first, second = PolicyClient(bounded.url), PolicyClient(bounded.url)
        first.__enter__(), second.__enter__()
        with pytest.raises(InvalidStatus, match='503'):
            connect(bounded.url, open_timeout=5)
        assert first.infer(_obs())['calls'] == 1  # (those served go on)
        first.__exit__(None, None, None)
        deadline = time.monotonic() + 10
        while bounded._connections > 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        with PolicyClient(bounded.url) as third:
            assert third.infer(_obs())['calls'] == 1
        second.__exit__(None, None, None)


def test_a_server_whose_accept_loop_ended_says_so_and_stops() -> None:
    """websockets' accept loop ends for good at an accept that fails (out of descriptors):
    the process lived on, holding its port, answering nobody. serve_forever now returns why,
    and the command exits (its runner can start another)."""
    server = PolicyServer(Counter, METADATA)
    server.start()
    server._server.socket.shutdown(socket.SHUT_RDWR)  # the next accept fails, as at EMFILE
    ended = server.serve_forever()
    assert 'stopped taking connections' in ended and server.url in ended, ended
    assert not server.accepting


def test_a_server_that_answers_twice_is_a_protocol_failure() -> None:
    """Each later request read the answer to the one before (the actions of an older state),
    without a word: the client now fails at the next request, saying why."""
    from harness_policy.protocol import packb, unpackb
    from websockets.sync.server import serve

    def twice(ws) -> None:
        ws.send(packb(METADATA))
        for message in ws:
            state = unpackb(message)['observation/state']
            for _ in range(2):
                ws.send(packb({'actions': np.tile(state, (10, 1))}))

    with serve(twice, '127.0.0.1', 0) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = f'ws://127.0.0.1:{server.socket.getsockname()[1]}'
        with PolicyClient(url) as client:
            client.infer(_obs())
            # (at the second request at the latest once the extra reply has arrived)
            with pytest.raises(PolicyError, match='sent a message nobody asked for'):
                for _ in range(50):
                    client.infer(_obs())
        server.shutdown()
