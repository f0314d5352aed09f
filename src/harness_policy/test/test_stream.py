"""The stream's checks of what a policy server says about itself, before any action is sent."""

import math

import pytest
from harness_policy.stream import PolicyRun, hold_ticks, metadata_problem

RUN = PolicyRun('p', 'ws://h:1', 'go', 25.0, (), False, 5.0, 1.0)


@pytest.mark.parametrize('metadata', [{}, {'action_hz': 25}, {'action_hz': 25.0}, None, [1]])
def test_a_server_that_agrees_or_says_nothing_passes(metadata):
    assert metadata_problem(metadata, RUN) == ''


@pytest.mark.parametrize(
    'said,words',
    [
        (50.0, 'acts at 50 Hz, but the catalogue says 25 Hz'),
        (math.nan, 'acts at nan Hz, but the catalogue says 25 Hz'),
        (math.inf, 'acts at inf Hz, but the catalogue says 25 Hz'),
        (-25.0, 'acts at -25 Hz'),
        (True, 'says its action_hz is True, not a number'),
        ('25', "says its action_hz is '25', not a number"),
    ],
)
def test_a_server_whose_rate_is_not_the_catalogues_is_named(said, words):
    problem = metadata_problem({'action_hz': said}, RUN)
    assert words in problem and 'policy p at ws://h:1' in problem


@pytest.mark.parametrize('hz', [0.0, -5.0, math.nan, math.inf, 7.0, 30.0])
def test_a_rate_that_does_not_divide_the_control_rate_is_refused(hz):
    with pytest.raises(ValueError, match='must be a whole multiple'):
        hold_ticks(hz, 25.0)


def test_a_dividing_rate_holds_each_action_that_many_ticks():
    assert (hold_ticks(25.0, 25.0), hold_ticks(5.0, 25.0), hold_ticks(12.5, 25.0)) == (1, 5, 2)
