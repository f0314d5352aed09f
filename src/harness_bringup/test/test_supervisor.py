"""harness_bringup.supervisor: the run folder of an episode process that wrote no summary."""

import io
import json

from harness_bringup.supervisor import _close

BASE = {'task': 'lift_cube', 'layout': 0, 'seed': 0, 'model': 'scripted'}
RECORDED = {'counts': {'/harness/events': 3}, 'ended': True, 'write_errors': 0}


def close(folder, returncode=-9, interrupted=False):
    code = _close(folder, BASE, returncode, interrupted, io.StringIO())
    summary = json.loads((folder / 'summary.json').read_text())
    lines = (folder / 'events.jsonl').read_text().splitlines()
    return code, summary, lines


def test_a_killed_episode_gets_an_end_event_on_a_line_of_its_own(tmp_path):
    (tmp_path / 'events.jsonl').write_text('{"type": "episode"}\n{"type": "cell", "out')
    code, summary, lines = close(tmp_path)
    assert code == 1 and summary['status'] == 'error' and summary['written_by'] == 'supervisor'
    assert 'killed by SIGKILL' in summary['detail']
    assert json.loads(lines[-1]) == {'type': 'end', 'status': 'error', 'detail': summary['detail']}
    assert lines[-2] == '{"type": "cell", "out'  # the cut line stays as it was


def test_an_episode_that_ended_before_it_died_keeps_its_own_end(tmp_path):
    end = {'type': 'end', 'status': 'finished', 'detail': 'the model finished'}
    (tmp_path / 'events.jsonl').write_text(f'{{"type": "episode"}}\n{json.dumps(end)}\n')
    code, summary, lines = close(tmp_path, interrupted=True)
    assert code == 130 and summary['status'] == 'finished'
    assert summary['detail'].startswith('the model finished; then the episode process ended')
    assert [json.loads(x)['type'] for x in lines] == ['episode', 'end']


def test_the_summary_says_what_became_of_the_bag(tmp_path):
    closed, open_, none = (tmp_path / n for n in ('closed', 'open', 'none'))
    for folder in (closed, open_, none):
        folder.mkdir()
    for folder in (closed, open_):
        (folder / 'bag').mkdir()
    (closed / 'recorder.out').write_text(f'recording /clock\nrecorded {json.dumps(RECORDED)}\n')
    (open_ / 'recorder.out').write_text('recording /clock\n')
    summary = close(closed)[1]
    assert summary['bag'] == 'bag' and 'bag_error' not in summary
    summary = close(open_)[1]
    assert summary['bag_incomplete'] is True and 'bag' not in summary
    assert 'did not report closing the bag' in summary['bag_error']
    summary = close(none)[1]
    assert not {'bag', 'bag_incomplete', 'bag_error'} & set(summary)
