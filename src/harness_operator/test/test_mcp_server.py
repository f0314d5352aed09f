"""The MCP server's tools over a session that stands in for the station (the SDK's in-memory
client, no robot): how calls are scheduled."""

from __future__ import annotations

import threading

import anyio
from harness_operator.mcp_server import TOOL_THREADS, SessionHolder, build_server
from mcp import Client


class _Trial:
    def as_dict(self) -> dict:
        return {'trial_id': 'T', 'ok': True}


class _MotionsThatWait:
    """A session whose motions wait until `release` (each as a long motion holds the session),
    and whose emergency stop answers at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.ended = threading.Event()  # a motion ended (released, or its wait ran out)
        self.waiting = 0
        self.estopped_while_waiting: bool | None = None
        self._count = threading.Lock()

    def start(self) -> dict:
        return {}

    def do_action(self, action, executor, key):
        with self._count:
            self.waiting += 1
        self.release.wait(20)  # (a bound only the estop's waiting for the motions reaches)
        self.ended.set()
        return _Trial()

    def estop(self, engage: bool) -> dict:
        self.estopped_while_waiting = not self.ended.is_set()
        return {'estop': engage}


def test_an_estop_is_answered_while_many_calls_wait_on_a_motion():
    # 45 calls past the SDK's shared 40 threads: each waiting call held one, and the estop
    # waited for a motion to end (over stdio it was not even read)
    session = _MotionsThatWait()
    server = build_server(SessionHolder(lambda: session))
    calls = 45

    async def main() -> dict:
        async with Client(server) as client, anyio.create_task_group() as group:
            for i in range(calls):
                action = {'action': {'skill': 'home'}, 'key': f'k{i}'}
                group.start_soon(client.call_tool, 'do_action', action)
            while session.waiting < TOOL_THREADS:  # the motion calls have their threads
                await anyio.sleep(0.01)
            stopped = await client.call_tool('estop', {'engage': True})
            session.release.set()
            return stopped.structured_content

    assert anyio.run(main) == {'estop': True}
    assert session.estopped_while_waiting, 'the estop waited for the motions to end'
    assert session.waiting == calls  # and every call ran, in turn
