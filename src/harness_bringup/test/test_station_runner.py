"""harness_bringup.station_runner: which episodes of a retired station were not run."""

from harness_bringup.station_runner import EPISODE_ERROR, station_failed

ITS_ERROR = f'{EPISODE_ERROR} (GraphError: the worker refused the reset)'


def test_an_error_with_a_failed_station_was_not_run_and_runs_again():
    assert station_failed('error', 'the recorder ended', retry=False, interrupted=False)
    assert station_failed('error', 'the recorder ended', retry=True, interrupted=False)


def test_an_error_alone_is_suspected_once_then_it_is_the_episodes_own():
    """A station of its own (harness run) counts the error as the episode's: a warm one runs
    it once more on a new station, and the same error there is counted, not dropped."""
    assert station_failed('error', ITS_ERROR, retry=False, interrupted=False)
    assert not station_failed('error', ITS_ERROR, retry=True, interrupted=False)


def test_other_endings_keep_their_status():
    for status in ('finished', 'episode_ended', 'model_service_failed', None):
        assert not station_failed(status, 'the recorder ended', retry=False, interrupted=False)
    assert not station_failed('error', '', retry=False, interrupted=False)  # not retired
    assert not station_failed('error', 'the recorder ended', retry=False, interrupted=True)


def test_an_episode_whose_station_died_before_its_summary_was_not_run_whatever_it_ended_as():
    """Killed after the episode's end event and before its summary: the supervisor's summary
    keeps the end event's status but has no outcome, so the episode runs again (and a retry
    whose station died too is not run). One killed after the episode wrote its summary keeps
    it (died is False: _supervise sets it only when the supervisor wrote the summary)."""
    died = 'the station process ended (killed by SIGKILL; see stations/station-1)'
    for status in ('finished', 'episode_ended', 'error'):
        for retry in (False, True):
            assert station_failed(status, died, retry, interrupted=False, died=True)
    assert not station_failed('finished', died, retry=False, interrupted=True, died=True)
    assert not station_failed('finished', died, retry=False, interrupted=False, died=False)


def test_a_ctrl_c_between_an_episodes_summary_and_the_stations_answer_loses_no_part(tmp_path):
    """The station answered an episode that had ended whole with nothing left to make (the
    Ctrl-C came after its summary): its run folder went without report and dataset. What its
    configuration asks is made; a run the station never summarised gets nothing."""
    from harness_bringup.station_runner import parts_left
    from harness_types.config import load_config

    run = tmp_path / 'run'
    run.mkdir()
    load_config(None).write(run / 'params.yaml')
    assert parts_left(run, (), 'interrupted') == ()  # no summary: not the episode's end
    (run / 'summary.json').write_text('{"status": "episode_ended"}')
    assert parts_left(run, (), 'interrupted') == ('dataset', 'report')
    assert parts_left(run, ('report',), 'interrupted') == ('report',)  # as the station said
    assert parts_left(run, (), '') == ()  # an answer that said nothing is left
