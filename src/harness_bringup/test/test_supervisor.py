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


def test_a_report_is_made_unless_the_run_recorded_lean(tmp_path):
    """The report of a killed episode, as its own process would have made it: none where its
    params.yaml says it recorded lean (`harness report RUN` makes one), and one where it has
    no params.yaml to say so (it died before writing it)."""
    from harness_types.config import GraphConfig, with_overrides

    full, lean, unknown = (tmp_path / n for n in ('full', 'lean', 'unknown'))
    for folder, recording in ((full, 'full'), (lean, 'lean'), (unknown, None)):
        folder.mkdir()
        (folder / 'events.jsonl').write_text('{"type": "episode"}\n')
        if recording:
            with_overrides(GraphConfig(), 'driver', recording=recording).write(
                folder / 'params.yaml'
            )
        close(folder)
    assert (full / 'report.html').is_file() and (unknown / 'report.html').is_file()
    assert not (lean / 'report.html').exists()


def test_the_summary_counts_what_the_calls_used_from_the_events(tmp_path):
    """The model calls an episode made before it died (and what they cost) are in the summary the
    supervisor writes: the tables count them."""
    asked = {'type': 'model_request', 'call': 1, 'reason': 'start', 'characters': 900}
    events = [
        {'type': 'episode'},
        {**asked, 'input_tokens': 1200, 'output_tokens': 300, 'cost_usd': 0.0081},
        {**asked, 'call': 2, 'reason': 'error', 'answered': False, 'why': 'interrupted'},
    ]
    (tmp_path / 'events.jsonl').write_text(''.join(json.dumps(e) + '\n' for e in events))
    _, summary, _ = close(tmp_path)
    assert summary['model_calls'] == 1 and summary['model_requests_unanswered'] == 1
    assert summary['tokens'] == {'input': 1200, 'output': 300}
    assert summary['cost_usd'] == 0.0081 and summary['request_characters'] == 1800
    assert summary['decisions']['start'] == 1 and summary['decisions']['error'] == 1


def test_an_episode_killed_as_hung_after_its_summary_is_noted_and_its_parts_are_left(tmp_path):
    """Killed at its deadline while it made its dataset or report: its own summary stays and
    says so; what `finishing` asks of the run is made (again: a part may have been cut short)."""
    from harness_bringup.run import finishing_of
    from harness_types.config import load_config, with_overrides

    (tmp_path / 'summary.json').write_text(json.dumps({**BASE, 'status': 'finished'}))
    code = _close(tmp_path, BASE, -9, False, io.StringIO(), 'it had not ended 9 s after ...')
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert code == 137 and summary['status'] == 'finished'
    assert summary['killed_as_hung'].startswith('the supervisor took it for hung')
    assert finishing_of(tmp_path) == ()  # no configuration: nothing is made
    config = with_overrides(load_config(None), 'driver', recording='full', write_dataset=True)
    config.write(tmp_path / 'params.yaml')
    (tmp_path / 'lerobot').mkdir()  # begun when it was killed: made again
    assert finishing_of(tmp_path) == ('dataset', 'report')
    with_overrides(config, 'driver', recording='lean').write(tmp_path / 'params.yaml')
    assert finishing_of(tmp_path) == ()
