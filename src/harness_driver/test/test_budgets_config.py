"""Budgets, prices and the driver's config."""

from pathlib import Path

import pytest
from harness_driver.budgets import Budgets
from harness_driver.config import ConfigError, DriverConfig, Price, load_config, load_prices

ROOT = Path(__file__).resolve().parents[3]
PRICES = {'m': Price(2.0, 10.0)}


def test_the_project_config_loads():
    config = load_config(ROOT / 'config' / 'harness.yaml')
    assert config.max_model_calls == 30 and config.model == 'scripted'
    assert Path(config.prompts).is_dir() and Path(config.price_table).is_file()
    assert config.cell_timeout_seconds == 120.0
    assert 'scripted' in load_prices(config.price_table)


@pytest.mark.parametrize(
    'text,message',
    [
        ('driver: [1, 2]', 'driver: needs a ros__parameters mapping'),
        ('driver:\n  ros__parameters:\n    max_calls: 3\n', "driver has no parameter 'max_calls'"),
        ('driver:\n  ros__parameters:\n    keep_images: -1\n', 'keep_images must be >= 0'),
        ('driver:\n  ros__parameters:\n    cameras: cam_head\n', 'driver.cameras must be'),
        ('driver: {ros__parameters: {', 'not valid YAML'),
    ],
)
def test_bad_config_files_say_what_is_wrong(tmp_path, text, message):
    path = tmp_path / 'harness.yaml'
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert message in str(exc.value) and str(path) in str(exc.value)


def test_a_bad_price_table(tmp_path):
    path = tmp_path / 'models.yaml'
    path.write_text('prices_usd_per_million_tokens:\n  m: {input: 1}\n')
    with pytest.raises(ConfigError, match='m: needs numbers input and output'):
        load_prices(path)


def test_calls_wall_time_and_cost_budgets():
    b = Budgets(
        DriverConfig(model='m', max_model_calls=2, max_wall_seconds=10, max_cost_usd=0.5), PRICES
    )
    assert b.stop_reason(0) is None
    assert b.add('m', 100_000, 10_000, verifier=False) == pytest.approx(0.3)
    assert b.calls_left == 1 and b.stop_reason(0) is None
    assert b.stop_reason(10.0) == 'wall_time_exhausted'
    b.add('m', 100_000, 0, verifier=True)  # the verifier costs but is not a decision
    assert b.usage.verifier_calls == 1 and b.calls_left == 1
    assert b.stop_reason(0) == 'cost_exhausted'
    b.add('m', 0, 0, verifier=False)
    assert b.stop_reason(0) == 'budget_exhausted'


def test_a_cost_cap_needs_a_price():
    with pytest.raises(ConfigError, match="no price for 'other'"):
        Budgets(DriverConfig(model='other', max_cost_usd=1.0), PRICES)
    b = Budgets(DriverConfig(model='other'), PRICES)
    assert b.add('other', 10, 10, verifier=False) is None and b.usage.cost_usd is None
