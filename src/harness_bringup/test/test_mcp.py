"""harness_bringup.mcp: closing a session's run folder."""

import json
import signal
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from harness_bringup.mcp import close_run
from harness_recording.run_folder import RunFolder

GOAL = {'task': 'place_in_bowl', 'layout': 0, 'seed': 0}


def test_a_session_without_a_tool_call_writes_its_summary_before_waiting_for_its_station(
    tmp_path,
):
    """The client lists the tools and leaves while the station started for it is still
    starting; it kills the server 2 s later. summary.json and the end event come first."""
    starting = threading.Event()  # the station's start, held until the summary was seen
    warming = threading.Thread(target=starting.wait, args=(30.0,))
    warming.start()
    run = RunFolder(tmp_path / 'run')
    seen: list[bool] = []

    def watch() -> None:
        deadline = time.monotonic() + 20.0  # only a failing close waits this out
        while not (tmp_path / 'run' / 'report.html').exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append(warming.is_alive() and (tmp_path / 'run' / 'report.html').exists())
        starting.set()

    watcher = threading.Thread(target=watch)
    watcher.start()
    previous = {n: signal.getsignal(n) for n in (signal.SIGINT, signal.SIGTERM)}
    try:
        close_run(run, {'warming': warming}, SimpleNamespace(error=None), 0.0, print, GOAL)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        starting.set()
        watcher.join()
    assert seen == [True]
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['status'] == 'session_ended' and 'called no tool' in summary['detail']
    events = [json.loads(x) for x in (tmp_path / 'run' / 'events.jsonl').read_text().splitlines()]
    assert events[-1] == {'type': 'end', 'status': 'session_ended', 'detail': summary['detail']}


def test_run_folders_a_killed_server_left_open_are_closed_by_the_next(tmp_path):
    """A server killed with SIGKILL leaves its run folder as it was (a summary saying
    `running`, no end event, the program's files in the temporary directory); the next server
    on the same journal closes it. Folders of other journals, and closed ones, stay as they
    are."""
    from harness_bringup.mcp import close_abandoned_runs
    from harness_bringup.program_workspace import new_program_workspace

    journal = tmp_path / 'j.jsonl'

    def folder(name: str, journal_path: Path, ended: bool = False) -> Path:
        run = RunFolder(tmp_path / name)
        run.event(
            {'type': 'episode', 'task': 'place_in_bowl', 'pid': 4242}
            | {'journal': str(journal_path)}
        )
        run.summary({**GOAL, 'status': 'running', 'trials': 1})
        if ended:
            run.event({'type': 'end', 'status': 'finished', 'detail': ''})
        return run.path

    killed = folder('20261207-1-place_in_bowl-l0-s0-mcp', journal)
    program = new_program_workspace(killed / 'workspace')
    (program / 'notes.txt').write_text('kept')
    other = folder('20261207-2-place_in_bowl-l0-s0-mcp', tmp_path / 'other.jsonl')
    closed = folder('20261207-3-place_in_bowl-l0-s0-mcp', journal, ended=True)
    said: list[str] = []
    close_abandoned_runs(tmp_path, journal, said.append)
    summary = json.loads((killed / 'summary.json').read_text())
    assert summary['status'] == 'error' and summary['trials'] == 1, summary
    assert 'pid 4242' in summary['detail'] and 'closed by the next server' in summary['detail']
    events = [json.loads(x) for x in (killed / 'events.jsonl').read_text().splitlines()]
    assert events[-1]['type'] == 'end' and events[-1]['status'] == 'error'
    assert (killed / 'workspace' / 'notes.txt').read_text() == 'kept'
    assert not program.exists() and (killed / 'report.html').is_file()
    for untouched in (other, closed):
        assert json.loads((untouched / 'summary.json').read_text())['status'] == 'running'
    assert len([line for line in said if 'closed' in line]) == 1, said
