"""Budgets and the price table."""

import pytest
from harness_driver.budgets import Budgets
from harness_driver.prices import Price, load_prices
from harness_types.config import ConfigError, DriverConfig

PRICES = {'m': Price(2.0, 10.0)}


def test_a_bad_price_table(tmp_path):
    path = tmp_path / 'models.yaml'
    path.write_text('prices_usd_per_million_tokens:\n  m: {input: 1}\n')
    with pytest.raises(ConfigError, match='m: needs numbers input and output'):
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
