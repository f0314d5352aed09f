"""harness_bringup.episode_deadline: when a supervisor takes an episode for hung (a clock of the
test's own: no waiting)."""

from harness_bringup.episode_deadline import EpisodeDeadline, episode_budget_s
from harness_types.config import load_config, with_overrides


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _params(folder, max_wall_seconds: float) -> None:
    config = with_overrides(load_config(None), 'driver', max_wall_seconds=max_wall_seconds)
    config.write(folder / 'params.yaml')


def test_an_episode_that_never_begins_is_overdue_after_the_start_allowance(tmp_path):
    clock = Clock()
    watch = EpisodeDeadline(start_s=60, overrun_s=10).watch(tmp_path, clock)
    clock.now += 60
    assert watch.overdue() == ''
    clock.now += 1
    assert 'had not begun its episode 60 s' in watch.overdue()
    assert 'no params.yaml' in watch.overdue()


def test_a_begun_episode_has_its_own_budget_and_the_overrun(tmp_path):
    clock = Clock()
    watch = EpisodeDeadline(start_s=60, overrun_s=10).watch(tmp_path, clock)
    clock.now += 50
    assert watch.overdue() == ''
    _params(tmp_path, 500)
    clock.now += 1  # seen at the next look (a second later): the budget counts from then
    assert watch.overdue() == ''
    assert watch.budget_s == 500
    clock.now += 510  # long past the start allowance: the episode's own budget counts now
    assert watch.overdue() == ''
    clock.now += 1
    why = watch.overdue()
    assert 'not ended 510 s after its episode began' in why
    assert 'max_wall_seconds (500 s)' in why


def test_params_are_looked_for_at_most_once_a_second(tmp_path):
    clock = Clock()
    watch = EpisodeDeadline(start_s=60, overrun_s=10).watch(tmp_path, clock)
    assert watch.overdue() == ''
    _params(tmp_path, 5)
    clock.now += 0.5
    assert watch.overdue() == '' and watch.budget_s is None  # not looked at yet
    clock.now += 0.5
    assert watch.overdue() == '' and watch.budget_s == 5


def test_params_that_cannot_be_read_yet_are_read_again(tmp_path):
    params = tmp_path / 'params.yaml'
    for part in ('driver:\n  ros__parameters: [', 'worker:\n  ros__parameters: {}\n', ''):
        params.write_text(part)  # written in part: no budget is taken for a default
        assert episode_budget_s(params) is None
    assert episode_budget_s(tmp_path / 'missing.yaml') is None
    clock = Clock()
    watch = EpisodeDeadline(start_s=60, overrun_s=10).watch(tmp_path, clock)
    assert watch.overdue() == '' and watch.budget_s is None
    _params(tmp_path, 7)
    clock.now += 1
    assert watch.overdue() == '' and watch.budget_s == 7


def test_a_run_folders_params_are_what_its_episode_wrote(tmp_path):
    """The params.yaml an episode writes reads back with its budget (the file the watch reads
    is config.write's, not one of the test's making)."""
    config = with_overrides(load_config(None), 'driver', max_wall_seconds=42.5)
    config.write(tmp_path / 'params.yaml')
    assert episode_budget_s(tmp_path / 'params.yaml') == 42.5
