"""A local stand-in for the Anthropic Messages API: real HTTP, scripted replies.

The driver's real `anthropic` client talks to it through ANTHROPIC_BASE_URL. Requests are
recorded (JSON bodies) so tests can check what the model was sent. Verifier requests (their
system prompt starts with VERIFIER_MARK) are answered from their own queue.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERIFIER_MARK = 'You are the verifier'


@dataclass
class Scripted:
    """One answer: a text reply, or (status != 200) an error the way the real service sends
    one; `blocks` replaces the content (e.g. [] or a tool_use block); `raw` is sent as the
    body as it is (a malformed answer, with its `content_type`); with `trickle` the body comes
    a byte at a time."""

    text: str = ''
    input_tokens: int = 100
    output_tokens: int = 20
    delay: float = 0.0
    status: int = 200
    headers: dict | None = None
    stop_reason: str = 'end_turn'
    blocks: list | None = None
    raw: bytes | None = None
    content_type: str = 'application/json'
    trickle: float = 0.0  # seconds between the body's bytes (a server that answers slowly)


def overloaded(retry_after: float | None = None) -> Scripted:
    headers = {'retry-after': str(retry_after)} if retry_after is not None else None
    return Scripted(status=529, headers=headers)


class MessagesServer:
    """`with MessagesServer(replies, verifier_replies) as server:`; server.url is the base URL.
    When a queue runs out its last reply is repeated."""

    def __init__(self, replies: list, verifier_replies: list | None = None) -> None:
        self.replies = [r if isinstance(r, Scripted) else Scripted(r) for r in replies]
        self.verifier_replies = [
            r if isinstance(r, Scripted) else Scripted(r) for r in verifier_replies or []
        ]
        self.requests: list[dict] = []
        self.verifier_requests: list[dict] = []
        self._lock = threading.Lock()
        # Set when the server closes: a reply still held back by its delay is not sent then
        # (its handler would otherwise outlive the test and write into a later one's stderr).
        self._closing = threading.Event()

    def _next(self, body: dict) -> Scripted:
        with self._lock:
            system = body.get('system') or ''
            if isinstance(system, list):
                system = ''.join(b.get('text', '') for b in system)
            if system.startswith(VERIFIER_MARK):
                self.verifier_requests.append(body)
                queue = self.verifier_replies
            else:
                self.requests.append(body)
                queue = self.replies
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def __enter__(self) -> MessagesServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            # Without it every reply waits ~40 ms for the client's delayed ACK.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get('content-length', 0))
                body = json.loads(self.rfile.read(length))
                reply = server._next(body)
                if server._closing.wait(reply.delay):
                    return
                if reply.status != 200:
                    kind = {429: 'rate_limit_error', 529: 'overloaded_error'}.get(
                        reply.status, 'api_error'
                    )
                    payload = json.dumps(
                        {'type': 'error', 'error': {'type': kind, 'message': 'scripted'}}
                    ).encode()
                else:
                    content = (
                        reply.blocks
                        if reply.blocks is not None
                        else [{'type': 'text', 'text': reply.text}]
                    )
                    payload = (
                        reply.raw
                        or json.dumps(
                            {
                                'id': f'msg_{len(server.requests)}',
                                'type': 'message',
                                'role': 'assistant',
                                'model': body.get('model', ''),
                                'content': content,
                                'stop_reason': reply.stop_reason,
                                'stop_sequence': None,
                                'usage': {
                                    'input_tokens': reply.input_tokens,
                                    'output_tokens': reply.output_tokens,
                                },
                            }
                        ).encode()
                    )
                self.send_response(reply.status)
                self.send_header('content-type', reply.content_type)
                self.send_header('content-length', str(len(payload)))
                for key, value in (reply.headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                if not reply.trickle:
                    self.wfile.write(payload)
                    return
                try:
                    for i in range(len(payload)):
                        self.wfile.write(payload[i : i + 1])
                        self.wfile.flush()
                        time.sleep(reply.trickle)
                except OSError:  # the client gave up
                    pass

            def log_message(self, *args) -> None:
                pass

        self.server = _QuietServer(('127.0.0.1', 0), Handler)
        self.url = f'http://127.0.0.1:{self.server.server_address[1]}'
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()


class _QuietServer(ThreadingHTTPServer):
    """A client that left before its reply (an episode ended, a test over) is no error."""

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)
