"""A client of policy servers speaking the openpi protocol (openpi's own servers or ours).

    with PolicyClient('ws://127.0.0.1:8000') as policy:
        policy.metadata             # what the server sent on connecting
        answer = policy.infer(obs)  # the decoded reply dict (observation.reply_of checks it)

Every failure is a `PolicyError` whose sentence says what happened and names the url. A failure
leaves the client closed (a late reply would otherwise answer the next request); a new
`PolicyClient` makes a new connection, and so a new policy on the server.
"""

from __future__ import annotations

import threading
from typing import NoReturn

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.frames import CloseCode
from websockets.sync.client import ClientConnection, connect

from harness_policy.protocol import Encoder, ProtocolError, unpackb

# How long closing waits for the server's side of the closing handshake.
_CLOSE_TIMEOUT_S = 2.0
MAX_MESSAGE_BYTES = 16 * 2**20  # the largest metadata or reply taken from a server
MAX_ERROR_CHARS = 500  # of a server's error text (it reaches logs and the model's turn)


class PolicyError(RuntimeError):
    """The policy server could not be reached or did not answer (the sentence says why)."""


class PolicyClient:
    """One connection to the policy server at `url` (ws://host:port).

    `infer` waits up to `timeout_s` for each reply; connecting and the metadata up to
    `open_timeout_s`. Calls from several threads are served one at a time; `close()` from
    another thread ends a call in progress (with a PolicyError).
    """

    def __init__(self, url: str, timeout_s: float = 10.0, open_timeout_s: float = 10.0) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._failure = ''
        self._closed_by_caller = False
        self._encoder = Encoder()
        self._ws: ClientConnection | None = None
        try:
            self._ws = connect(
                url,
                compression=None,
                # A reply is a chunk of actions (kB); a server that sends more is refused
                # rather than allowed to fill the skill server's memory.
                max_size=MAX_MESSAGE_BYTES,
                open_timeout=open_timeout_s,
                close_timeout=_CLOSE_TIMEOUT_S,
                # A policy server is reached directly: the proxy of the environment (websockets
                # uses it by default) is for the internet, not for the station's GPU machine.
                proxy=None,
                # The connection outlives this call (websockets 17 warns without the flag).
                legacy=True,
            )
        except (InvalidURI, ValueError) as exc:  # (urlparse's for a bad host or port)
            raise PolicyError(f'{url!r} is not a websocket url (ws://host:port): {exc}') from exc
        except TimeoutError as exc:
            raise PolicyError(
                f'cannot connect to the policy server at {url}: no answer within '
                f'{open_timeout_s:g} s'
            ) from exc
        except OSError as exc:
            raise PolicyError(
                f'cannot connect to the policy server at {url}: {exc.strerror or exc}'
            ) from exc
        except InvalidHandshake as exc:
            raise PolicyError(
                f'cannot connect to the policy server at {url}: the websocket handshake '
                f'failed ({exc})'
            ) from exc
        metadata = self._receive('its metadata', open_timeout_s)
        if not isinstance(metadata, dict):
            kind = type(metadata).__name__
            self._fail(f'{self._server} sent metadata that is a {kind}, not a map')
        self.metadata: dict = metadata

    def infer(self, obs: dict) -> dict:
        """The server's reply to `obs`, decoded (not checked: see observation.reply_of)."""
        with self._lock:
            self._check_open()
            self._check_nothing_unasked()
            try:
                with self._encoder.packed(obs) as frame:
                    self._ws.send(frame)
            except ProtocolError as exc:
                # Nothing was sent, but the rule stays simple: any failure ends the client.
                self._fail(f'cannot send this observation to {self._server}: {exc}', exc)
            except ConnectionClosed as exc:
                self._connection_closed(exc, 'before the request')
            answer = self._receive('a reply', self.timeout_s)
            if not isinstance(answer, dict):
                self._fail(f'{self._server} answered a {type(answer).__name__}, not a map')
            return answer

    def close(self) -> None:
        """Closes the connection (idempotent)."""
        self._closed_by_caller = True
        if not self._failure:
            self._failure = 'it was closed'
        if self._ws is not None:
            self._ws.close()

    def __enter__(self) -> PolicyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _server(self) -> str:
        return f'the policy server at {self.url}'

    def _check_nothing_unasked(self) -> None:
        """PolicyError when the server sent a message since its last reply: a server that
        answers twice would have each later request read the answer to the one before.
        Best-effort (the protocol has no request ids): a duplicate still on its way when the
        next request is sent is not seen then, only at a later request."""
        try:
            extra = self._ws.recv(timeout=0)
        except TimeoutError:
            return
        except ConnectionClosed as exc:
            self._connection_closed(exc, 'before the request')
        kind = 'a text frame' if isinstance(extra, str) else f'{len(extra)} bytes'
        self._fail(
            f'{self._server} sent a message nobody asked for ({kind} after its last reply): '
            'a reply sent twice would answer the wrong request'
        )

    def _check_open(self) -> None:
        if self._failure:
            raise PolicyError(f'the client of {self._server} is unusable: {self._failure}')

    def _receive(self, what: str, timeout_s: float) -> object:
        try:
            message = self._ws.recv(timeout=timeout_s)
        except TimeoutError as exc:
            self._fail(f'{self._server} did not send {what} within {timeout_s:g} s', exc)
        except ConnectionClosed as exc:
            self._connection_closed(exc, f'while {what} was awaited')
        if isinstance(message, str):
            text = message.strip()
            if len(text) > MAX_ERROR_CHARS:
                text = text[:MAX_ERROR_CHARS] + ' [clipped]'
            self._fail(f'{self._server} answered an error: {text}')
        try:
            return unpackb(message)
        except ProtocolError as exc:
            self._fail(f'{self._server} sent {what} that is not a valid message: {exc}', exc)

    def _connection_closed(self, exc: ConnectionClosed, when: str) -> NoReturn:
        if self._closed_by_caller:  # close() from another thread
            raise PolicyError(f'the client of {self._server} was closed {when}') from exc
        self._fail(f'{self._server} closed the connection {when} ({_closed(exc)})', exc)

    def _fail(self, sentence: str, cause: BaseException | None = None) -> NoReturn:
        """Raises PolicyError(sentence), leaving the client closed."""
        if not self._failure:
            self._failure = sentence
        if self._ws is not None:
            self._ws.close()
        raise PolicyError(sentence) from cause


def _closed(exc: ConnectionClosed) -> str:
    if exc.sent is not None and exc.sent.code == CloseCode.MESSAGE_TOO_BIG:
        return f'it sent a message over {MAX_MESSAGE_BYTES // 2**20} MiB'
    frame = exc.rcvd
    if frame is None:
        return 'without a close frame'
    return f'code {frame.code}' + (f': {frame.reason}' if frame.reason else '')
