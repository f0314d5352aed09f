"""harness_recording.run_folder: the walk the tools that read benches and datasets share."""

import json
import os
import sys
from pathlib import Path

from harness_recording.run_folder import WORKSPACE, found_in_runs, read_events


def _run(folder, **summary):
    folder.mkdir(parents=True)
    (folder / 'summary.json').write_text(json.dumps(summary))
    (folder / 'events.jsonl').write_text('')
    return folder


def test_the_walk_finds_runs_and_datasets_and_passes_over_every_program_workspace(tmp_path):
    bench = tmp_path / 'bench'
    a = _run(bench / 'episodes' / 'lift_cube-l0-s0' / 'run-a', task='lift_cube')
    b = _run(bench / 'episodes' / 'lift_cube-l0-s1' / 'run-b', task='lift_cube')
    (a / 'lerobot' / 'meta').mkdir(parents=True)
    (a / 'lerobot' / 'meta' / 'info.json').write_text('{}')
    # What a program left in its workspace: a forged run folder and dataset, deep nesting.
    forged = _run(a / WORKSPACE / 'fake_run', task='lift_cube', seed=777777)
    (forged / 'meta').mkdir()
    (forged / 'meta' / 'info.json').write_text('{}')
    deep = b / WORKSPACE
    deep.mkdir()
    path = str(deep)
    for _ in range(300):
        path = os.path.join(path, 'd')
        os.mkdir(path)
    (Path(path) / 'summary.json').write_text('{}')
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100)  # the walk does not recurse: nesting cannot break it
    try:
        assert found_in_runs(deep, 'summary.json') == [Path(path) / 'summary.json']
    finally:
        sys.setrecursionlimit(limit)
    assert found_in_runs(bench, 'summary.json') == [a / 'summary.json', b / 'summary.json']
    assert found_in_runs(bench, 'events.jsonl') == [a / 'events.jsonl', b / 'events.jsonl']
    assert found_in_runs(bench, 'meta/info.json') == [a / 'lerobot' / 'meta' / 'info.json']
    # A folder named `workspace` outside a run folder is walked as any other.
    other = _run(tmp_path / 'collection' / WORKSPACE / 'run-c', task='lift_cube')
    assert found_in_runs(tmp_path / 'collection', 'summary.json') == [other / 'summary.json']


def test_the_walk_follows_no_link(tmp_path):
    outside = _run(tmp_path / 'outside' / 'run', task='lift_cube')
    root = tmp_path / 'root'
    root.mkdir()
    (root / 'to_outside').symlink_to(outside.parent, target_is_directory=True)
    (root / 'loop').symlink_to(root, target_is_directory=True)
    inside = root / 'run'
    inside.mkdir()
    (inside / 'summary.json').symlink_to(outside / 'summary.json')
    assert found_in_runs(root, 'summary.json') == []
    assert found_in_runs(tmp_path / 'nothing', 'summary.json') == []


def test_events_that_are_not_json_objects_are_left_out(tmp_path):
    """A line cut short, one nested past the parser, one that is JSON but no object: left
    out; the readers of events (the report, the export, the outcome model) get the rest."""
    lines = ['{"type": "episode"}', '{"type": "cell', '[' * 100000 + ']' * 100000, '[1]', '5']
    text = '\n'.join([*lines, '{"type": "end"}']) + '\n'
    not_utf8 = b'{"type": "\xff\xfe"}\n'  # (export had stopped on it with a traceback)
    (tmp_path / 'events.jsonl').write_bytes(not_utf8 + text.encode())
    assert read_events(tmp_path) == [{'type': 'episode'}, {'type': 'end'}]
