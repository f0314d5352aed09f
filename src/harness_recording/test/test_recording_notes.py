"""harness_recording.recording_notes: what an episode's summary says of its bag."""

import json

from harness_recording.recording_notes import judge_recording, recorder_report

ENDED = {'counts': {'/harness/events': 4}, 'ended': True, 'write_errors': 0}


def test_the_report_is_the_last_recorded_line(tmp_path):
    out = tmp_path / 'recorder.out'
    assert recorder_report(out) is None  # no output at all
    out.write_text('recording /clock, /tf\n')
    assert recorder_report(out) is None
    out.write_text(f'recording /clock\nrecorded {json.dumps(ENDED)}\n')
    assert recorder_report(out) == ENDED
    out.write_text('recording /clock\nrecorded {"counts": \n')  # cut short
    assert recorder_report(out) is None


def test_a_bag_with_its_end_event_is_complete_even_when_its_recorder_had_to_be_stopped():
    assert judge_recording({'bag': 'bag'}, ENDED, complete=True) == {'bag': 'bag'}
    # stopped with SIGTERM for being slow, it closed the bag with the end event in it
    assert judge_recording({'bag': 'bag'}, ENDED, complete=False, code=0) == {'bag': 'bag'}


def test_what_is_missing_is_said_with_why():
    notes = judge_recording({'bag': 'bag'}, None, complete=False, code=-9)
    assert 'bag' not in notes and notes['bag_incomplete'] is True
    assert notes['bag_error'] == (
        'the recorder ended with signal 9; it did not report closing the bag; '
        'it did not finish in time: the bag is incomplete'
    )
    notes = judge_recording({'bag': 'bag'}, ENDED | {'ended': False}, complete=True)
    assert notes['bag_error'] == "it did not see the episode's end event: the bag is incomplete"
    notes = judge_recording({'bag': 'bag'}, ENDED | {'write_errors': 2}, complete=True)
    assert notes['bag_error'] == '2 messages could not be written: the bag is incomplete'


def test_messages_refused_from_outside_the_graph_are_noted():
    notes = judge_recording({'bag': 'bag'}, ENDED | {'refused': 3}, complete=True)
    assert notes['bag'] == 'bag' and notes['bag_refused']['messages_from_outside_the_graph'] == 3


def test_a_bag_short_of_the_states_the_worker_published_is_incomplete():
    report = ENDED | {'counts': {'/joint_states': 114, '/clock': 112, '/harness/events': 4}}
    full = {'/joint_states': 114, '/clock': 114}
    assert judge_recording({'bag': 'bag'}, report | {'counts': full}, True, 0, full) == {
        'bag': 'bag'
    }
    notes = judge_recording({'bag': 'bag'}, report, True, 0, full)
    assert 'bag' not in notes and notes['bag_incomplete'] is True
    assert notes['bag_error'] == (
        'it recorded fewer states than the worker published (112 of 114 on /clock): '
        'the bag is incomplete'
    )
    # a topic the bag does not record (/tf in a lean recording) is passed over
    lean = judge_recording({'bag': 'bag'}, report, True, 0, {'/joint_states': 114, '/tf': 114})
    assert lean == {'bag': 'bag'}
    # no counts known (a worker in another process): nothing to compare
    assert judge_recording({'bag': 'bag'}, report, True, 0, None) == {'bag': 'bag'}
