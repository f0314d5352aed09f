"""harness_bringup.episode_deadline: when a supervisor takes an episode for hung (a clock of the
test's own: no waiting)."""

import math

from harness_bench.tasks import TASKS
from harness_bringup.episode_deadline import EpisodeDeadline, episode_bounds
from harness_driver.episode import longest_past_budget_s
from harness_types.config import load_config, with_overrides


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _params(folder, **driver) -> None:
    config = with_overrides(load_config(None), 'driver', **driver)
    config.write(folder / 'params.yaml')


def _bounds(budget: float, past: float):
    """Bounds as episode_bounds gives them, without reading the configuration."""
    return lambda params, _task: (budget, past) if params.is_file() else None


def test_an_episode_that_never_begins_is_overdue_after_the_start_allowance(tmp_path):
    clock = Clock()
    watch = EpisodeDeadline(start_s=60, overrun_s=10).watch(tmp_path, 'lift_cube', clock)
    clock.now += 60
    assert watch.overdue() == ''
    clock.now += 1
    assert 'had not begun its episode 60 s' in watch.overdue()
    assert 'no params.yaml' in watch.overdue()


def test_a_begun_episode_has_its_own_bounds_and_the_overrun(tmp_path):
    clock = Clock()
    deadline = EpisodeDeadline(start_s=60, overrun_s=10, bounds=_bounds(500, 40))
    watch = deadline.watch(tmp_path, 'lift_cube', clock)
    clock.now += 50
    assert watch.overdue() == ''
    (tmp_path / 'params.yaml').write_text('')
    clock.now += 1  # seen at the next look (a second later): the bounds count from then
    assert watch.overdue() == '' and watch.bounds == (500, 40)
    clock.now += 550  # long past the start allowance: the episode's own bounds count now
    assert watch.overdue() == ''
    clock.now += 1
    why = watch.overdue()
    assert 'not ended 550 s after its episode began' in why
    assert 'max_wall_seconds (500 s), 40 s its driver may run past them' in why


def test_params_are_looked_for_at_most_once_a_second(tmp_path):
    clock = Clock()
    deadline = EpisodeDeadline(start_s=60, overrun_s=10, bounds=_bounds(5, 0))
    watch = deadline.watch(tmp_path, 'lift_cube', clock)
    assert watch.overdue() == ''
    (tmp_path / 'params.yaml').write_text('')
    clock.now += 0.5
    assert watch.overdue() == '' and watch.bounds is None  # not looked at yet
    clock.now += 0.5
    assert watch.overdue() == '' and watch.bounds == (5, 0)


def test_the_bounds_are_the_runs_own(tmp_path):
    """From the params.yaml the episode wrote: its max_wall_seconds and what the driver may run
    past it with the run's timeouts; with policies, the task's step limit too."""
    params = tmp_path / 'params.yaml'
    assert episode_bounds(params, 'lift_cube') is None  # not written yet
    _params(tmp_path, max_wall_seconds=42.5, model_timeout_seconds=7.0)
    config = load_config(params)
    budget, past = episode_bounds(params, 'lift_cube')
    assert budget == 42.5
    assert past == longest_past_budget_s(
        config.driver, config.kernel.cell_timeout_seconds, False, 0
    )
    # the call under way, the cell of its reply and the wrap-up, the goal's verdict
    cell_wait = config.kernel.cell_timeout_seconds + 60
    assert past == 7.0 + 2 * cell_wait + config.driver.verifier_timeout_seconds
    assert not list(tmp_path.glob('.*'))  # written whole, by a rename: no part left

    policies = with_overrides(config, 'kernel', policies='config/policies.yaml')
    policies.write(params)
    _, with_policy = episode_bounds(params, 'stack_blocks_three')
    step_limit = TASKS['stack_blocks_three'].step_limit
    assert with_policy == past + cell_wait + step_limit * 0.5
    _, unknown = episode_bounds(params, 'no_such_task')  # the longest of any task's
    assert unknown >= with_policy


def test_params_that_cannot_be_read_give_no_deadline(tmp_path):
    """A failure of the watch's own (the file is written whole: it would be a bug) never kills
    an episode."""
    params = tmp_path / 'params.yaml'
    params.write_text('driver: [')
    assert episode_bounds(params, 'lift_cube') == (math.inf, 0.0)
    clock = Clock()
    watch = EpisodeDeadline(start_s=60, overrun_s=10).watch(tmp_path, 'lift_cube', clock)
    assert watch.overdue() == ''
    clock.now += 10**6
    assert watch.overdue() == ''
