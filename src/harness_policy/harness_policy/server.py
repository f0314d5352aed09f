"""A policy server speaking the openpi protocol, so that openpi's `WebsocketClientPolicy` (and
our `PolicyClient`) can reach any `Policy`.

The protocol, per connection: the server sends its metadata (one binary frame, a msgpack map);
then each binary frame from the client is an observation, answered by one binary frame holding
the reply dict. When a request is malformed or the policy fails, the server sends the error as
a text frame and closes the connection with 1011 (internal error), as openpi servers do; the
client's next connection gets a new policy. An HTTP GET /healthz answers 200 "OK".

websockets' threaded server runs each connection in its own thread, so policies of different
connections run concurrently; `factory` is called from those threads.
"""

from __future__ import annotations

import http
import logging
import signal
import threading
from collections.abc import Callable

from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.http11 import Request, Response
from websockets.sync.server import Server, ServerConnection, serve

from harness_policy.protocol import Policy, ProtocolError, packb, unpackb

log = logging.getLogger('harness_policy')

HEALTH_PATH = '/healthz'
# The largest observation frame taken from a client: several cameras' images and depth are a
# few MiB; a larger frame is refused by websockets (close 1009) before it is held whole.
MAX_OBSERVATION_BYTES = 64 * 2**20
# Connections served at once; one more is answered 503 before its handshake. Each holds a
# thread, a policy and a few descriptors: a flood of idle clients ran the process out of
# descriptors, and websockets' accept loop ends for good at the first accept that fails.
MAX_CONNECTIONS = 64
# A close reason must fit a control frame (123 bytes); the text frame before it says more.
_CLOSE_REASON = 'policy server error, see the text frame before this close'


class PolicyServer:
    """Serves `factory()` policies (one per connection) at ws://host:port.

    `start()` serves in a background thread; `serve_forever()` serves until Ctrl-C or SIGTERM.
    `port=0` takes a free port (`start()` returns it).
    """

    def __init__(
        self,
        factory: Callable[[], Policy],
        metadata: dict,
        host: str = '127.0.0.1',
        port: int = 0,
    ) -> None:
        self._factory = factory
        # Encoded once: a metadata dict that cannot be sent fails here, not on each connection.
        self._metadata = packb(dict(metadata))
        self._host = host
        self._port = port
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._connections = 0
        self._count = threading.Lock()

    @property
    def port(self) -> int:
        """The bound port once started (the requested one before)."""
        return self._port

    @property
    def url(self) -> str:
        host = f'[{self._host}]' if ':' in self._host else self._host
        return f'ws://{host}:{self._port}'

    def start(self) -> int:
        """Binds and serves in a background thread; the bound port."""
        if self._server is not None:
            raise RuntimeError(f'the policy server at {self.url} is already started')
        self._server = serve(
            self._serve_connection,
            self._host,
            self._port,
            # What openpi servers and clients use: images do not compress, and a frame of
            # several cameras is megabytes.
            compression=None,
            max_size=MAX_OBSERVATION_BYTES,
            process_request=self._health,
        )
        self._port = self._server.socket.getsockname()[1]
        # A daemon thread, and so daemon connection threads (they inherit it): a policy stuck
        # in infer cannot keep the process alive after stop() gave up on it.
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f'policy-server-{self._port}', daemon=True
        )  # (it returns when stop() closes the socket, or at an accept that fails)
        self._thread.start()
        log.info('policy server listening at %s', self.url)
        return self._port

    @property
    def accepting(self) -> bool:
        """The server takes new connections (started, not stopped, and its accept loop did not
        end on a failed accept: out of descriptors)."""
        return self._server is not None and self._thread is not None and self._thread.is_alive()

    def serve_forever(self) -> str:
        """Serves until Ctrl-C or SIGTERM (when called from the main thread), then stops: ''.
        Or until the server can take no more connections (its accept failed): it stops and
        says why, so that whoever runs it can start another."""
        if self._server is None:
            self.start()
        stopping = threading.Event()
        previous = {}
        if threading.current_thread() is threading.main_thread():
            # Both signals only set the event: a KeyboardInterrupt raised wherever the main
            # thread happens to be (inside the event's own lock, say) is not a clean stop.
            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, lambda *_: stopping.set())
        ended = ''
        try:
            # Wakes for the signal handler (it runs in this thread between waits).
            while not stopping.wait(0.5):
                if not self.accepting:
                    ended = (
                        f'the policy server at {self.url} stopped taking connections: an accept '
                        f'failed (out of file descriptors?) with {self._connections} open'
                    )
                    log.error('%s', ended)
                    break
        except KeyboardInterrupt:  # _thread.interrupt_main() still raises it here
            pass
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self.stop()
        return ended

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stops listening, closes every connection (1001, going away) and waits up to
        `timeout_s` for the policies still in `infer` to return. Idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        # shutdown() waits for every connection thread, and one whose policy is inside infer
        # only ends when infer returns: wait for it in a thread of its own, up to the timeout.
        done = threading.Thread(target=server.shutdown, name='policy-server-stop', daemon=True)
        done.start()
        done.join(timeout_s)
        if done.is_alive():
            log.warning(
                'policy server at %s stopped with policies still inside infer after %.1f s',
                self.url,
                timeout_s,
            )
        if self._thread is not None:
            self._thread.join(timeout_s)
        log.info('policy server at %s stopped', self.url)

    def __enter__(self) -> PolicyServer:
        if self._server is None:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _health(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.path == HEALTH_PATH:
            return connection.respond(http.HTTPStatus.OK, 'OK\n')
        if self._connections >= MAX_CONNECTIONS:
            log.warning(
                'policy server at %s: %d connections, one more refused', self.url, MAX_CONNECTIONS
            )
            return connection.respond(
                http.HTTPStatus.SERVICE_UNAVAILABLE,
                f'the policy server serves {MAX_CONNECTIONS} connections at once; try later\n',
            )
        return None  # the websocket handshake

    def _serve_connection(self, ws: ServerConnection) -> None:
        with self._count:
            self._connections += 1
        try:
            self._serve(ws)
        finally:
            with self._count:
                self._connections -= 1

    def _serve(self, ws: ServerConnection) -> None:
        peer = _address(ws.remote_address)
        log.info('policy connection from %s', peer)
        requests, ended, policy = 0, 'ended', None
        try:
            try:
                policy = self._factory()
            except Exception as exc:
                ended = self._fail(ws, f'the policy could not be made: {_sentence(exc)}', exc)
                return
            ws.send(self._metadata)
            while True:
                failure, exc = self._answer(ws, policy)
                if failure:
                    ended = self._fail(ws, failure, exc)
                    return
                requests += 1
        except ConnectionClosed as exc:
            ended = _closed(exc)
        finally:
            # A policy that holds resources for its run (a thread, a GPU context) frees them.
            close = getattr(policy, 'close', None)
            if callable(close):
                try:
                    close()
                except Exception:
                    log.exception('policy connection from %s: the policy failed to close', peer)
            log.info('policy connection from %s: %s after %d requests', peer, ended, requests)

    def _answer(self, ws: ServerConnection, policy: Policy) -> tuple[str, Exception | None]:
        """Serves one request: ('', None), or what went wrong (and the exception, if any)."""
        message = ws.recv()
        if isinstance(message, str):
            return 'malformed request: a text frame, expected a binary one', None
        try:
            obs = unpackb(message)
        except ProtocolError as exc:
            return f'malformed request: {exc}', None
        if not isinstance(obs, dict):
            return f'malformed request: a {type(obs).__name__}, expected a map', None
        try:
            answer = policy.infer(obs)
        except Exception as exc:
            return f'the policy failed: {_sentence(exc)}', exc
        if not isinstance(answer, dict):
            return f'the policy answered a {type(answer).__name__}, not a dict', None
        try:
            frame = packb(answer)
        except ProtocolError as exc:
            return f'the policy answered something that cannot be sent: {exc}', None
        ws.send(frame)
        return '', None

    def _fail(self, ws: ServerConnection, text: str, exc: Exception | None) -> str:
        """Logs the failure (with the policy's traceback), tells the client, closes with 1011;
        how the connection ended."""
        log.error('policy server at %s: %s', self.url, text, exc_info=exc)
        try:
            ws.send(text)
            ws.close(CloseCode.INTERNAL_ERROR, _CLOSE_REASON)
        except ConnectionClosed:
            pass  # the client left first; nothing to tell it
        return f'closed with 1011 ({text})'


def _sentence(exc: BaseException) -> str:
    text = str(exc)
    return f'{type(exc).__name__}: {text}' if text else type(exc).__name__


def _address(address: object) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        return f'{address[0]}:{address[1]}'
    return str(address)


def _closed(exc: ConnectionClosed) -> str:
    if exc.rcvd is None and exc.sent is None:
        return 'the connection dropped'
    # Whoever sent the first close frame closed it (the other side echoes the code).
    by = 'the client' if exc.rcvd is not None and exc.rcvd_then_sent is not False else 'the server'
    frame = exc.rcvd if by == 'the client' else exc.sent
    return f'closed by {by}, code {frame.code}'
