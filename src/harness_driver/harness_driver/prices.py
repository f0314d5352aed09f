"""The model price table (config/models.yaml): USD per million tokens, for cost accounting."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import yaml
from harness_types.config import ConfigError, load_yaml, yaml_problem
from harness_types.whole_file import read_text


@dataclass(frozen=True)
class Price:
    input: float  # USD per million input tokens
    output: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1e6


def load_prices(path: str | Path) -> dict[str, Price]:
    """The price table: model name -> Price. A malformed entry is a ConfigError naming it."""
    if not path:
        return {}
    path = Path(path)
    try:
        doc = load_yaml(read_text(path)) or {}
    except OSError as exc:
        raise ConfigError(f'price table {path} cannot be read: {exc.strerror}') from None
    except UnicodeDecodeError:
        raise ConfigError(f'{path}: not UTF-8 text') from None
    except yaml.YAMLError as exc:
        raise ConfigError(f'{path}: not valid YAML: {yaml_problem(exc)}') from None
    table = doc.get('prices_usd_per_million_tokens') if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        raise ConfigError(f'{path}: needs a prices_usd_per_million_tokens mapping')
    prices = {}
    for model, entry in table.items():
        given = [entry.get(k) if isinstance(entry, dict) else None for k in ('input', 'output')]
        # (numbers alone: "5", "inf" and true were taken, and an infinite price wrote NaN)
        if not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in given
        ):
            raise ConfigError(
                f'{path}: {model}: needs finite numbers input and output (USD per million tokens)'
            )
        price = Price(float(given[0]), float(given[1]))
        if not (price.input >= 0 and price.output >= 0):
            raise ConfigError(f'{path}: {model}: prices must be >= 0')
        prices[str(model)] = price
    return prices
