"""End to end: `harness mcp place_in_bowl` driven by the `mcp` SDK's own client over stdio, through
a whole task: observe, pick and place with verdicts, a lost reply retried with its key, a
duplicated key, a budget exhausted into a ticket that the owner resolves, the emergency stop,
and a second session that resumes from the journal and finishes. Then the run folders: the
ground truth, the trials as a LeRobot dataset."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest
from harness_types.execution import STOPPED_FROM_OUTSIDE
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from harness_operator import tool_names

ROOT = Path(__file__).resolve().parents[3]
TOOLS = set(tool_names.TOOLS)  # what `harness mcp --help` names


def pq_rows(path: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def server(tmp: Path, journal: Path) -> StdioServerParameters:
    config = tmp / 'harness.yaml'
    if not config.exists():
        text = (ROOT / 'config' / 'harness.yaml').read_text()
        text = text.replace('reobserve_budget: 3', 'reobserve_budget: 1')
        text = text.replace('prompts: ../prompts', f'prompts: {ROOT}/prompts')
        text = text.replace('price_table: models.yaml', f'price_table: {ROOT}/config/models.yaml')
        text = text.replace(
            'outcome_model: outcome_model.json', f'outcome_model: {ROOT}/config/outcome_model.json'
        )
        config.write_text(text)
    return StdioServerParameters(
        command=sys.executable,
        args=['-m', 'harness_bringup.cli', '--config', str(config), 'mcp', 'place_in_bowl']
        + ['--out', str(tmp / 'runs'), '--journal', str(journal)],
        env=dict(os.environ),
        cwd=str(tmp),
    )


def structured(result) -> dict:
    assert not result.is_error, result.content[0].text if result.content else result
    return result.structured_content


def error_text(result) -> str:
    assert result.is_error, result
    return result.content[0].text


async def first_session(tmp: Path, journal: Path) -> dict:
    seen: dict = {}
    async with Client(server(tmp, journal)) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        assert tools == TOOLS  # no run_policy/list_policies: the learned half is not enabled
        looked = await c.call_tool('observe')
        assert not looked.is_error, looked.content[0].text
        observation = json.loads(looked.content[0].text)
        assert looked.content[1].type == 'image'
        labels = [o['label'] for o in observation['objects']]
        assert any('green' in x for x in labels) and any('bowl' in x for x in labels), labels
        # nothing moved: the second look spends the re-observe budget (1), the third is refused
        assert not (await c.call_tool('observe')).is_error
        refused = error_text(await c.call_tool('observe'))
        assert 'reobserve budget is exhausted' in refused and 'T1' in refused
        tickets = structured(await c.call_tool('tickets'))['tickets']
        assert [(t['id'], t['status']) for t in tickets] == [('T1', 'open')]

        pick = {'skill': 'pick', 'obj': 'green block'}
        r = structured(await c.call_tool('do_action', {'action': pick, 'key': 'pick-1'}))
        assert r['executor_status'] == 'done', r
        assert r['verdict'] == 'satisfied' and r['tier'] == 1 and r['ok'], r
        assert r['verifier_evidence'] and 'budgets_left' in r
        again = structured(await c.call_tool('do_action', {'action': pick, 'key': 'pick-1'}))
        assert again == r  # the same key: the same trial, nothing moved

        bad = error_text(await c.call_tool('do_action', {'action': {'skill': 'fly'}, 'key': 'x'}))
        assert "unknown skill 'fly'" in bad
        final = error_text(await c.call_tool('recheck', {'key': 'pick-1'}))
        assert 'only an ambiguous or stale verdict' in final

        assert structured(await c.call_tool('estop', {'engage': True})) == {'estop': True}
        place = {'skill': 'place', 'into': 'blue bowl'}
        stopped = error_text(await c.call_tool('do_action', {'action': place, 'key': 'place-1'}))
        assert 'emergency stop is engaged' in stopped
        structured(await c.call_tool('estop', {'engage': False}))

        # The reply is lost (the client stops waiting); the retry with the same key returns
        # the one trial that ran.
        with pytest.raises((MCPError, TimeoutError, anyio.get_cancelled_exc_class())):
            await c.call_tool(
                'do_action', {'action': place, 'key': 'place-1'}, read_timeout_seconds=0.5
            )
        r = structured(await c.call_tool('do_action', {'action': place, 'key': 'place-1'}))
        assert r['executor_status'] == 'done' and r['verdict'] == 'satisfied', r
        assert r['tier'] == 2, r
        view = structured(await c.call_tool('journal'))
        assert [t['key'] for t in view['progress']] == ['pick-1', 'place-1']
        assert view['open_tickets'][0]['id'] == 'T1'
        seen['place'] = r

        # The owner resolves the ticket; the server grants the budget at the next call.
        out = subprocess.run(
            [sys.executable, '-m', 'harness_bringup.cli', 'tickets', str(journal)]
            + ['--resolve', 'T1', '--note', 'checked the cameras'],
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert structured(await c.call_tool('budgets'))['left']['reobserve'] == 1
    return seen


async def second_session(tmp: Path, journal: Path, seen: dict) -> None:
    async with Client(server(tmp, journal)) as c:
        view = structured(await c.call_tool('journal'))
        assert view['sessions'] == 2 and view['goal']['task'] == 'place_in_bowl'
        assert [t['key'] for t in view['progress']] == ['pick-1', 'place-1']
        place = {'skill': 'place', 'into': 'blue bowl'}
        r = structured(await c.call_tool('do_action', {'action': place, 'key': 'place-1'}))
        assert r == seen['place']
        done = structured(await c.call_tool('finish'))
        assert done['goal_verdict']['verdict'] == 'satisfied', done
        after = error_text(
            await c.call_tool('do_action', {'action': {'skill': 'home'}, 'key': 'late'})
        )
        assert 'the run is finished' in after


def test_an_agent_operates_place_in_bowl_over_mcp(tmp_path):
    journal = tmp_path / 'runs' / 'place.journal.jsonl'
    seen = anyio.run(first_session, tmp_path, journal)
    anyio.run(second_session, tmp_path, journal, seen)

    runs = sorted((tmp_path / 'runs').glob('*-place_in_bowl-l0-s0-mcp*'))
    assert len(runs) == 2
    first, second = (json.loads((r / 'summary.json').read_text()) for r in runs)
    assert first['status'] == 'session_ended' and first['trials'] == 2
    assert second['status'] == 'finished' and second['outcome']['success'], second
    events = [json.loads(x) for x in (runs[0] / 'events.jsonl').read_text().splitlines()]
    trials = [e for e in events if e['type'] == 'trial']
    assert [t['key'] for t in trials] == ['pick-1', 'place-1']
    info = json.loads((runs[0] / 'lerobot' / 'meta' / 'info.json').read_text())
    assert info['codebase_version'] == 'v3.0' and info['total_episodes'] == 2
    assert (runs[0] / 'lerobot' / 'demos' / 'meta' / 'info.json').is_file()
    episodes = pq_rows(runs[0] / 'lerobot' / 'meta' / 'episodes' / 'chunk-000' / 'file-000.parquet')
    assert [e['harness/key'] for e in episodes] == ['pick-1', 'place-1']
    assert [e['tasks'] for e in episodes] == [
        ['pick up the green block'],
        ['put what you hold into the blue bowl'],
    ]
    assert episodes[0]['harness/verdict'] == 'satisfied' and episodes[0]['harness/tier'] == 1
    # harness export: the run folders (from their bags) as one dataset
    out = subprocess.run(
        [sys.executable, '-m', 'harness_bringup.cli', 'export', *map(str, runs)]
        + ['--lerobot', str(tmp_path / 'exported')],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    exported = json.loads((tmp_path / 'exported' / 'meta' / 'info.json').read_text())
    assert exported['total_episodes'] == 2
    # The bag holds a JPEG every 25 ticks (the default): a camera without an image of its own
    # at every frame is left out, and info.json says why (harness demos records every tick).
    assert 'observation.images.cam_head' not in exported['features']
    assert 'every few ticks' in exported['harness/cameras_left_out']['cam_head']
    records = [json.loads(x) for x in journal.read_text().splitlines()]
    assert [r['type'] for r in records].count('session') == 2
    assert any(r['type'] == 'resolved' and r['id'] == 'T1' for r in records)


async def with_policies(tmp: Path, journal: Path) -> None:
    params = server(tmp, journal)
    params.args += ['--policies', str(ROOT / 'config' / 'policies.yaml')]
    async with Client(params) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        assert tools == TOOLS | set(tool_names.POLICY_TOOLS)
        listed = await c.call_tool('list_policies')
        assert 'scripted_expert' in listed.content[0].text
        pick = {'skill': 'pick', 'obj': 'green block'}
        first = structured(
            await c.call_tool(
                'do_action', {'action': pick, 'key': 'p1', 'executor': 'policy:scripted_expert'}
            )
        )
        assert first['executor'] == 'policy:scripted_expert'
        assert first['executor_status'] in ('done', 'timeout', 'clamped', 'error')
        assert first['verdict'] in ('satisfied', 'violated', 'ambiguous', 'stale')
        # the same action with another executor spends the executor-switch budget (1) ...
        second = structured(await c.call_tool('do_action', {'action': pick, 'key': 'p2'}))
        assert second['executor'] == 'skill'
        assert second['budgets_left']['executor_switch'] == 0
        # ... and a second switch is refused into a ticket: nothing runs
        third = await c.call_tool(
            'do_action', {'action': pick, 'key': 'p3', 'executor': 'policy:scripted_expert'}
        )
        assert 'executor_switch budget is exhausted' in error_text(third)
        view = structured(await c.call_tool('journal'))
        assert [t['key'] for t in view['progress']] == ['p1', 'p2']
        assert view['open_tickets'][0]['failure_class'] == 'executor_switch'
        # the emergency stop in the middle of a motion: it stops at the next tick
        results: dict = {}

        async def move() -> None:
            # a minute of simulated time holding still: seconds of wall time
            action = {'program': 'run_controller(lambda obs: {}, max_seconds=60.0)'}
            results['move'] = await c.call_tool('do_action', {'action': action, 'key': 'm1'})

        async with anyio.create_task_group() as tg:
            tg.start_soon(move)
            await anyio.sleep(1.0)
            results['estop'] = await c.call_tool('estop', {'engage': True})
        moved = structured(results['move'])
        assert moved['executor_status'] == 'error', moved
        assert 'emergency stop' in moved['executor_detail'], moved
        assert structured(results['estop'])['estop'] is not False


def test_policies_are_an_executor_and_switching_to_one_is_budgeted(tmp_path):
    anyio.run(with_policies, tmp_path, tmp_path / 'runs' / 'policies.journal.jsonl')


def authorised(url: str, token: str):
    """A streamable HTTP transport that sends `token` (as `Authorization: Bearer`)."""
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    headers = {'Authorization': f'Bearer {token}'}
    return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))


async def over_http(url: str, token: str) -> None:
    async with Client(authorised(url, token)) as c:
        looked = await c.call_tool('observe')
        assert not looked.is_error, looked.content[0].text
        r = structured(await c.call_tool('do_action', {'action': {'skill': 'home'}, 'key': 'h1'}))
        assert r['executor_status'] == 'done' and r['verdict'] == 'satisfied', r
    # a second HTTP session finds the same station and journal
    async with Client(authorised(url, token)) as c:
        again = structured(
            await c.call_tool('do_action', {'action': {'skill': 'home'}, 'key': 'h1'})
        )
        assert again == r
        assert structured(await c.call_tool('journal'))['sessions'] == 1


@contextlib.contextmanager
def http_server(tmp_path: Path, journal: Path, stop: int = signal.SIGINT):
    """`harness mcp --http` in a subprocess until the block ends (then `stop` is sent); yields
    (url, process, token): the bearer token read from the file the server wrote."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    params = server(tmp_path, journal)
    log = open(tmp_path / 'server.log', 'w')
    proc = subprocess.Popen(
        [params.command, *params.args, '--http', str(port)],
        env=params.env,
        cwd=params.cwd,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(('127.0.0.1', port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / 'server.log').read_text()
                assert time.monotonic() < deadline, 'the HTTP server did not listen'
                time.sleep(0.2)
        token_file = tmp_path / 'runs' / f'mcp-{port}.token'
        assert token_file.stat().st_mode & 0o777 == 0o600
        yield f'http://127.0.0.1:{port}/mcp', proc, token_file.read_text().strip()
    finally:
        if proc.poll() is None:
            proc.send_signal(stop)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_the_server_speaks_streamable_http_too(tmp_path):
    with http_server(tmp_path, tmp_path / 'runs' / 'http.journal.jsonl') as (url, _, token):
        anyio.run(over_http, url, token)
    runs = list((tmp_path / 'runs').glob('*-mcp'))
    assert len(runs) == 1 and (runs[0] / 'summary.json').is_file()
    assert not list((tmp_path / 'runs').glob('*.token'))  # the token died with the server


def test_the_http_server_refuses_a_client_without_its_token(tmp_path):
    """Any local process may reach the port: without the bearer token (or with another) a
    request is answered 401 and no session opens, so nothing moves."""
    import httpx2

    with http_server(tmp_path, tmp_path / 'runs' / 'refused.journal.jsonl') as (url, _, token):
        hello = {
            'jsonrpc': '2.0',
            'id': 1,
            'method': 'initialize',
            'params': {
                'protocolVersion': '2025-06-18',
                'capabilities': {},
                'clientInfo': {'name': 'intruder', 'version': '0'},
            },
        }
        accept = {'Accept': 'application/json, text/event-stream'}
        for headers in ({}, {'Authorization': 'Bearer guess'}, {'Authorization': token}):
            r = httpx2.post(url, json=hello, headers={**accept, **headers}, timeout=10)
            assert r.status_code == 401, (headers, r.status_code, r.text)
            assert r.headers['www-authenticate'].startswith('Bearer')
        for scheme in ('Bearer', 'bearer'):  # (a scheme's name is case-insensitive)
            ok = httpx2.post(
                url,
                json=hello,
                headers={**accept, 'Authorization': f'{scheme} {token}'},
                timeout=10,
            )
            assert ok.status_code == 200, ok.text
    (run,) = (tmp_path / 'runs').glob('*-mcp')
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['status'] == 'session_ended' and 'called no tool' in summary['detail']


async def long_action(url: str, token: str) -> None:
    # Many motions with waits between them: only a stop from outside ends it within a minute
    program = (
        'import time\nfor i in range(60):\n'
        "    move_eef([0.3, -0.2 + 0.05 * (i % 2), 1.0], arm='right')\n    time.sleep(0.5)\n"
    )
    action = {'program': program}
    with contextlib.suppress(Exception):  # the server goes away under the call
        async with Client(authorised(url, token)) as c:
            await c.call_tool('do_action', {'action': action, 'key': 'long'})


@pytest.mark.parametrize('stop', [signal.SIGTERM, signal.SIGHUP], ids=['term', 'hangup'])
def test_a_server_terminated_mid_action_still_leaves_its_run_folder(tmp_path, stop):
    # (a SIGHUP skipped uvicorn's graceful stop: two tracebacks, the call's reply lost)
    journal = tmp_path / 'runs' / 'term.journal.jsonl'
    with http_server(tmp_path, journal, stop) as (url, proc, token):

        def dispatched() -> bool:
            return journal.is_file() and '"key": "long"' in journal.read_text()

        async def act_then_terminate() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(long_action, url, token)
                deadline = time.monotonic() + 120
                while not dispatched() and time.monotonic() < deadline:  # (it moves now)
                    await anyio.sleep(0.1)
                await anyio.sleep(0.5)
                proc.send_signal(stop)

        anyio.run(act_then_terminate)
        proc.wait(timeout=90)
    (run,) = (tmp_path / 'runs').glob('*-mcp')
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['status'] == 'session_ended' and summary['outcome'] is not None, summary
    events = [json.loads(x)['type'] for x in (run / 'events.jsonl').read_text().splitlines()]
    assert events[-1] == 'end'
    records = [json.loads(x) for x in journal.read_text().splitlines()]
    assert any(r['type'] == 'dispatch' and r['key'] == 'long' for r in records)
    # the robot stopped at the signal, not once the call ended (uvicorn waits for it)
    log = (tmp_path / 'server.log').read_text()
    assert 'interrupted: the emergency stop is engaged' in log, log
    assert 'Traceback' not in log, log
    (trial,) = [r['record'] for r in records if r['type'] == 'trial']
    assert trial['executions'][-1]['detail'].startswith(STOPPED_FROM_OUTSIDE), trial


def _drain(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 65536):
            pass


def _command_line(process: Path) -> str:
    try:
        return (process / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
    except OSError:
        return ''


@pytest.mark.parametrize(
    'end', ['client_dies', 'interrupt', 'hangup', 'terminal_gone', 'stops_reading']
)
def test_a_client_that_dies_mid_action_stops_the_robot_at_once(tmp_path, end):
    """The client is killed while a program of many motions runs (its end of the pipe
    closes), the server gets a Ctrl-C or a SIGHUP (its terminal closed), or the client closes
    its end of the server's standard output while its requests' pipe stays open (the SDK's
    writer died on the broken pipe, and the server went on, deaf, until its input closed):
    the emergency stop is engaged at once, so the
    program's next motion is refused and the server ends (its pending call unanswered, not
    waiting for the client to write again), rather than running every motion of the program
    first."""
    from mcp_types import LATEST_PROTOCOL_VERSION

    params = server(tmp_path, tmp_path / 'runs' / 'j.jsonl')
    terminal = None
    if end == 'terminal_gone':  # (its standard error a terminal that is closed, then SIGHUP)
        import pty

        terminal, tty = pty.openpty()
    proc = subprocess.Popen(
        [params.command, *params.args],
        env=params.env,
        cwd=params.cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=tty if terminal is not None else open(tmp_path / 'server.log', 'w'),
    )
    if terminal is not None:
        os.close(tty)
        (tmp_path / 'server.log').write_text('')
        threading.Thread(target=_drain, args=(terminal,), daemon=True).start()
    program = (
        'import time\nfor i in range(30):\n'
        "    move_eef([0.3, -0.2 + 0.05 * (i % 2), 1.0], arm='right')\n    time.sleep(0.5)\n"
    )

    def send(message: dict) -> None:
        proc.stdin.write((json.dumps({'jsonrpc': '2.0', **message}) + '\n').encode())
        proc.stdin.flush()

    try:
        info = {'name': 'dying-client', 'version': '0'}
        send(
            {
                'id': 1,
                'method': 'initialize',
                'params': {'protocolVersion': LATEST_PROTOCOL_VERSION},
            }
            | {'capabilities': {}, 'clientInfo': info}
        )
        assert json.loads(proc.stdout.readline())['id'] == 1
        send({'method': 'notifications/initialized'})
        action = {'action': {'program': program}, 'key': 'moves'}
        send(
            {'id': 2, 'method': 'tools/call'}
            | {'params': {'name': 'do_action', 'arguments': action}}
        )
        deadline = time.monotonic() + 120

        def moves() -> int:
            logs = list((tmp_path / 'runs').glob('*-mcp/kernel.log'))
            return logs[0].read_text().count('"call": "move_eef"') if logs else 0

        while moves() < 1:
            assert proc.poll() is None and time.monotonic() < deadline, 'no motion began'
            time.sleep(0.05)
        if end == 'client_dies':
            proc.stdin.close()  # the client is gone
        elif end == 'stops_reading':
            proc.stdout.close()  # (its requests' pipe stays open)
        else:  # (the client's end stays open)
            if terminal is not None:
                os.close(terminal)  # (its writes now fail: EIO)
            proc.send_signal(signal.SIGINT if end == 'interrupt' else signal.SIGHUP)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert moves() <= 3, moves()  # (30 once the program had run to its end)
    (run,) = (tmp_path / 'runs').glob('*-mcp')
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['status'] == 'session_ended', summary
    said = {'client_dies': 'the client left', 'stops_reading': 'standard output'}.get(
        end, 'interrupted'
    )
    log = (tmp_path / 'server.log').read_text()
    if terminal is None:  # (a closed terminal shows nothing)
        assert f'{said}' in log and 'the emergency stop is engaged' in log, log
        assert 'Traceback' not in log, log
    assert proc.returncode >= 0, proc.returncode  # (a hung-up terminal: it had aborted)
    # no process of the station lives on (the terminal's hang-up had left them running)
    ours = [p for p in Path('/proc').glob('[0-9]*') if str(tmp_path) in _command_line(p)]
    assert not ours, [_command_line(p) for p in ours]

    # The next session replays the stopped trial to the step it ended at, not to the end of
    # its program (which then ran on to the step limit: a session that could do nothing)
    async def resume() -> dict:
        async with Client(server(tmp_path, tmp_path / 'runs' / 'j.jsonl')) as c:
            return structured(await c.call_tool('journal'))['this_session']

    resumed = anyio.run(resume)
    assert resumed == {'resumed_trials': 1}, resumed  # (and no resume_mismatches)


def test_a_session_without_a_tool_call_leaves_a_run_folder_that_says_so(tmp_path):
    """A client that lists the tools and leaves: the station, started for it, is never used,
    and the run folder says why it holds no trial (with the session's task), not that
    something failed."""

    async def list_and_leave() -> None:
        async with Client(server(tmp_path, tmp_path / 'runs' / 'j.jsonl')) as c:
            assert {t.name for t in (await c.list_tools()).tools} == TOOLS

    anyio.run(list_and_leave)
    (run,) = (tmp_path / 'runs').glob('*-mcp')
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['status'] == 'session_ended', summary
    assert 'called no tool' in summary['detail'] and summary['task'] == 'place_in_bowl'
    events = [json.loads(x) for x in (run / 'events.jsonl').read_text().splitlines()]
    assert events[-1]['type'] == 'end' and events[-1]['status'] == 'session_ended'


async def pick_and_undo(tmp: Path, journal: Path) -> tuple[list, list, dict, str, str]:
    async with Client(server(tmp, journal)) as c:
        before = json.loads((await c.call_tool('observe')).content[0].text)['objects']
        picked = structured(
            await c.call_tool(
                'do_action', {'action': {'skill': 'pick', 'obj': 'green block'}, 'key': 'p'}
            )
        )
        assert picked['ok'], picked
        undone = structured(await c.call_tool('undo'))
        after = json.loads((await c.call_tool('observe')).content[0].text)['objects']
        again = error_text(await c.call_tool('undo'))
        press = {'skill': 'press', 'target': 'blue bowl'}
        await c.call_tool('do_action', {'action': press, 'key': 'b'})
        no_inverse = error_text(await c.call_tool('undo'))
        return before, after, undone, again, no_inverse


def test_undo_puts_a_picked_object_back_within_a_centimetre(tmp_path):
    journal = tmp_path / 'runs' / 'undo.journal.jsonl'
    before, after, undone, again, no_inverse = anyio.run(pick_and_undo, tmp_path, journal)

    def block(objects):
        return next(o for o in objects if 'green' in o['label'])

    moved = [
        a - b for a, b in zip(block(after)['position'], block(before)['position'], strict=True)
    ]
    assert sum(d * d for d in moved) ** 0.5 < 0.01, moved
    assert undone['inverse']['skill'] == 'place' and undone['trial']['ok'], undone
    assert undone['trial']['key'] == 'undo:p' and undone['budgets_left']['undo'] == 1
    assert 'an undo is not taken back' in again
    assert 'a press cannot be taken back' in no_inverse
