"""Budgets and the price table."""

import pytest
from harness_driver.budgets import Budgets, usage_fields, usage_of_events
from harness_driver.prices import Price, load_prices
from harness_types.config import ConfigError, DriverConfig

PRICES = {'m': Price(2.0, 10.0)}


def test_a_bad_price_table(tmp_path):
    path = tmp_path / 'models.yaml'
    path.write_text('prices_usd_per_million_tokens:\n  m: {input: 1}\n')
    with pytest.raises(ConfigError, match='m: needs finite numbers input and output'):
        load_prices(path)
    # (an infinite price wrote cost_usd NaN into summary.json; strings and true were taken)
    for entry in (
        '{input: .inf, output: 1}',
        '{input: "5", output: 1}',
        '{input: true, output: 1}',
    ):
        path.write_text(f'prices_usd_per_million_tokens:\n  m: {entry}\n')
        with pytest.raises(ConfigError, match='m: needs finite numbers'):
            load_prices(path)
    path.write_text('prices_usd_per_million_tokens:\n  m: {input: -1, output: 1}\n')
    with pytest.raises(ConfigError, match='prices must be >= 0'):
        load_prices(path)


def test_calls_wall_time_and_cost_budgets():
    b = Budgets(
        DriverConfig(model='m', max_model_calls=2, max_wall_seconds=10, max_cost_usd=0.5), PRICES
    )
    assert b.stop_reason(0) is None
    assert b.add('m', 100_000, 10_000, verifier=False) == pytest.approx(0.3)
    assert b.calls_left == 1 and b.stop_reason(0) is None
    assert b.stop_reason(10.0) == 'wall_time_exhausted'
    assert b.stop_reason(0, worst_case_usd=0.21) == 'cost_exhausted'  # it could pass the cap
    b.add('m', 100_000, 0, verifier=True)  # the verifier costs, and counts as a call
    assert b.usage.verifier_calls == 1 and b.usage.model_calls == 1 and b.calls_left == 0
    assert b.stop_reason(0) == 'budget_exhausted'


def test_a_cost_cap_needs_a_price():
    with pytest.raises(ConfigError, match="no price for 'other'"):
        Budgets(DriverConfig(model='other', max_cost_usd=1.0), PRICES)
    b = Budgets(DriverConfig(model='other'), PRICES)
    assert b.add('other', 10, 10, verifier=False) is None and b.usage.cost_usd is None


def _request(call, reason, cost, tokens=(100, 10), answered=True):
    event = {'type': 'model_request', 'call': call, 'reason': reason, 'characters': 1000}
    if not answered:
        return {**event, 'answered': False, 'why': 'overloaded'}
    return {**event, 'input_tokens': tokens[0], 'output_tokens': tokens[1], 'cost_usd': cost}


def test_the_usage_counted_from_events_is_the_drivers_own():
    """What a supervisor counts from a dead episode's events is what the driver's Budgets counted
    of the same calls."""
    b = Budgets(DriverConfig(model='m'), PRICES)
    events = [{'type': 'episode'}]
    for call, (reason, tokens) in enumerate([('start', (1000, 50)), ('error', (2000, 80))], 1):
        cost = b.add('m', *tokens, verifier=False)
        events.append(_request(call, reason, cost, tokens))
    events.append({'type': 'verify', 'claim': 'x', 'answered': False})  # no verifier asked
    events.append({'type': 'verify', 'claim': 'y', 'answered': False, 'asked': True})  # no answer
    cost = b.add('m', 500, 5, verifier=True)
    events.append({'type': 'verify', 'answered': True, 'input_tokens': 500, 'output_tokens': 5,
                   'cost_usd': cost})  # fmt: skip
    events.append(_request(3, 'program_end', None, answered=False))
    events.append({'type': 'cell', 'output': 'x'})
    counted = usage_of_events(events)
    decisions = {'start': 1, 'error': 1, 'program_end': 1}
    assert counted == usage_fields(b.usage, 1, decisions, 3000, verifier_unanswered=1)
    assert counted['model_calls'] == 2 and counted['verifier_calls'] == 1
    assert counted['verifier_requests_unanswered'] == 1
    assert counted['model_requests_unanswered'] == 1
    assert counted['cost_usd'] == pytest.approx((3500 * 2 + 135 * 10) / 1e6)


def _sent(call, reason):
    return {'type': 'model_request_sent', 'call': call, 'reason': reason, 'characters': 1000}


def test_a_request_out_when_the_episode_died_counts_as_unanswered():
    """The driver says each request before it is sent; one with no event of its end was still
    out when the process died."""
    events = [_sent(1, 'start'), _request(1, 'start', 0.01), _sent(2, 'error')]
    counted = usage_of_events(events)
    assert counted['model_calls'] == 1 and counted['model_requests_unanswered'] == 1
    assert counted['decisions']['start'] == 1 and counted['decisions']['error'] == 1
    assert counted['request_characters'] == 2000 and counted['cost_usd'] == 0.01
    # A request that ended (answered or not) is counted once, by its own event.
    events += [_request(2, 'error', None, answered=False)]
    again = usage_of_events(events)
    assert again['model_requests_unanswered'] == 1 and again['request_characters'] == 2000


def test_a_call_without_a_price_leaves_the_cost_unknown():
    events = [_request(1, 'start', 0.01), _request(2, 'format', None)]
    assert usage_of_events(events)['cost_usd'] is None
    assert usage_of_events([])['cost_usd'] == 0.0 and usage_of_events([])['model_calls'] == 0


def test_a_price_table_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    import os

    os.mkfifo(tmp_path / 'models.yaml')
    with pytest.raises(ConfigError, match='cannot be read: not a regular file'):
        load_prices(tmp_path / 'models.yaml')
