"""harness_bringup.mcp: closing a session's run folder."""

import json
import signal
import threading
import time
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
    previous = signal.getsignal(signal.SIGTERM)
    try:
        close_run(run, {'warming': warming}, SimpleNamespace(error=None), 0.0, print, GOAL)
    finally:
        signal.signal(signal.SIGTERM, previous)
        starting.set()
        watcher.join()
    assert seen == [True]
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['status'] == 'session_ended' and 'called no tool' in summary['detail']
    events = [json.loads(x) for x in (tmp_path / 'run' / 'events.jsonl').read_text().splitlines()]
    assert events[-1] == {'type': 'end', 'status': 'session_ended', 'detail': summary['detail']}
