"""The driver's parameters and the model price table, read from the node graph's YAML.

The `driver:` section of config/harness.yaml (ROS 2 parameter-file format) is the one source;
the `harness` command reads it here, a driver node would get the same values as parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path

import yaml


class ConfigError(ValueError):
    """A config file is missing, malformed or has a wrong value; the message says which."""


@dataclass(frozen=True)
class DriverConfig:
    model: str = 'scripted'
    verifier_model: str = ''
    max_model_calls: int = 30
    max_wall_seconds: float = 1800.0
    max_cost_usd: float = 0.0
    keep_images: int = 2
    max_history_turns: int = 12
    max_tokens: int = 4096
    model_timeout_seconds: float = 120.0
    model_retries: int = 2
    cameras: tuple[str, ...] = ('cam_head',)
    prompts: str = ''
    price_table: str = ''
    api: str = 'all'
    record_bag: bool = True
    cell_timeout_seconds: float = 120.0  # from the kernel's section

    @property
    def verifier(self) -> str:
        return self.verifier_model or self.model

    @property
    def api_names(self) -> list[str] | None:
        names = [n.strip() for n in self.api.split(',') if n.strip()]
        return None if names in ([], ['all']) else names


def _read_yaml(path: Path, what: str):
    try:
        return yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f'{what} {path} does not exist') from None
    except yaml.YAMLError as exc:
        raise ConfigError(f'{path}: not valid YAML: {exc}') from None


def _section(doc: dict, node: str, path: Path) -> dict:
    section = doc.get(node, {}) or {}
    params = section.get('ros__parameters', {}) if isinstance(section, dict) else None
    if not isinstance(params, dict):
        raise ConfigError(f'{path}: {node}: needs a ros__parameters mapping')
    return params


def _typed(name: str, value, default, path: Path):
    if isinstance(default, bool) or default is None:
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif isinstance(default, tuple):
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
        value = tuple(value) if ok else value
    else:
        ok = isinstance(value, str)
    if not ok:
        raise ConfigError(
            f'{path}: driver.{name} must be {type(default).__name__}-like, not {value!r}'
        )
    return value


def load_config(path: Path | None) -> DriverConfig:
    """The driver's parameters from `path` (defaults when None). Relative `prompts` and
    `price_table` paths are resolved against the file's folder."""
    if path is None:
        return DriverConfig()
    path = Path(path)
    doc = _read_yaml(path, 'config file')
    if not isinstance(doc, dict):
        raise ConfigError(f'{path}: expected a mapping of node names')
    params = _section(doc, 'driver', path)
    known = {f.name: f.default for f in fields(DriverConfig)}
    values = {}
    for name, value in params.items():
        if name not in known or name == 'cell_timeout_seconds':
            raise ConfigError(
                f'{path}: driver has no parameter {name!r}; it has: '
                f'{", ".join(n for n in known if n != "cell_timeout_seconds")}'
            )
        values[name] = _typed(name, value, known[name], path)
    kernel = _section(doc, 'kernel', path)
    if 'cell_timeout_seconds' in kernel:
        values['cell_timeout_seconds'] = _typed(
            'cell_timeout_seconds', kernel['cell_timeout_seconds'], 1.0, path
        )
    for name in ('prompts', 'price_table'):
        if values.get(name):
            values[name] = str((path.parent / values[name]).resolve())
    config = DriverConfig(**values)
    for name in ('max_model_calls', 'max_tokens', 'model_timeout_seconds', 'max_wall_seconds'):
        if getattr(config, name) <= 0:
            raise ConfigError(f'{path}: driver.{name} must be > 0, not {getattr(config, name)}')
    for name in ('keep_images', 'max_history_turns', 'model_retries', 'max_cost_usd'):
        if getattr(config, name) < 0:
            raise ConfigError(f'{path}: driver.{name} must be >= 0, not {getattr(config, name)}')
    return config


def with_overrides(config: DriverConfig, **overrides) -> DriverConfig:
    """The config with the given fields replaced (command-line flags); None keeps the value."""
    return replace(config, **{k: v for k, v in overrides.items() if v is not None})


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
    doc = _read_yaml(path, 'price table')
    table = doc.get('prices_usd_per_million_tokens') if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        raise ConfigError(f'{path}: needs a prices_usd_per_million_tokens mapping')
    prices = {}
    for model, entry in table.items():
        try:
            prices[str(model)] = Price(float(entry['input']), float(entry['output']))
        except (TypeError, KeyError, ValueError):
            raise ConfigError(
                f'{path}: {model}: needs numbers input and output (USD per million tokens)'
            ) from None
    return prices
