"""A bearer token in front of `harness mcp --http`: every HTTP request must carry
`Authorization: Bearer <token>` (MCP's HTTP transport authorisation header), or it is answered
401 and never reaches the station. The token is made at start and kept by whoever started the
server (harness_bringup.mcp writes it to a file only they may read)."""

from __future__ import annotations

import hmac
import json
import os
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def new_token() -> str:
    return secrets.token_urlsafe(32)


def write_token(path: Path, token: str) -> None:
    """The token in `path`, readable by its owner alone (made 0600 before it is written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)  # a link or someone else's file planted there is not written
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write(token + '\n')


class BearerToken:
    """ASGI middleware: HTTP requests without the token get 401; lifespan events pass."""

    def __init__(self, app: App, token: str) -> None:
        if not token:
            raise ValueError('a bearer token must not be empty')
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope['type'] in ('http', 'websocket'):
            given = b''
            for name, value in scope.get('headers', ()):
                if name.lower() == b'authorization':
                    given = value
            # The scheme's name is case-insensitive (RFC 7235); the token is not.
            scheme, _, credentials = given.strip().partition(b' ')
            bearer = scheme.lower() == b'bearer'
            if not hmac.compare_digest(credentials.strip() if bearer else b'', self.expected):
                if scope['type'] == 'websocket':
                    await send({'type': 'websocket.close', 'code': 1008})
                else:
                    await _refuse(send, 'missing' if not given else 'wrong')
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, what: str) -> None:
    body = json.dumps(
        {
            'error': 'unauthorized',
            'detail': f'{what} bearer token: send "Authorization: Bearer <token>" with the token '
            'harness mcp --http printed at start (and wrote to its token file)',
        }
    ).encode()
    await send(
        {
            'type': 'http.response.start',
            'status': 401,
            'headers': [
                (b'content-type', b'application/json'),
                (b'content-length', str(len(body)).encode()),
                (b'www-authenticate', b'Bearer realm="harness"'),
            ],
        }
    )
    await send({'type': 'http.response.body', 'body': body})
