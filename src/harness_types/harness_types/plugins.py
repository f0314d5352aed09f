"""How every plugin is found: a plugin is one module in its kind's folder (a package such as
`harness_worker.backends`), named by its file; a backend may also be any importable module
named by its dotted path (one kept outside this repository). The module defines the kind's
factory (a worker backend's `make_station`, a perception backend's `make_backend`, a bench
task's `TASK`).

Worker backends, perception backends and bench tasks are found this way; skills are names in
the program API's table and policies entries in the catalogue (configuration, no code)."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from typing import Any

_MODULE_NAME = re.compile(r'[A-Za-z_]\w*(\.[A-Za-z_]\w*)*')


class PluginError(ValueError):
    """The named plugin cannot be loaded; the message says why and what is built in."""


def plugin_module(folder: str, name: str) -> str:
    """The module of plugin `name`: a module of `folder`, or `name` itself when dotted."""
    return name if '.' in name else f'{folder}.{name}'


def builtin_plugins(folder: str) -> list[str]:
    """The plugins shipped in `folder`, by name (its public modules)."""
    package = importlib.import_module(folder)
    return sorted(
        m.name
        for m in pkgutil.iter_modules(package.__path__)
        if not m.name.startswith('_') and not m.ispkg
    )


def plugin_found(folder: str, name: str) -> bool:
    """Whether plugin `name` is a module that exists (without importing it: a configuration
    is checked before the graph that loads it starts)."""
    if not isinstance(name, str) or not _MODULE_NAME.fullmatch(name):
        return False
    try:
        return importlib.util.find_spec(plugin_module(folder, name)) is not None
    except (ImportError, ValueError):  # a parent package that does not exist
        return False


def load_plugin(what: str, folder: str, name: str, factory: str) -> Any:
    """The `factory` attribute of plugin `name` (what: e.g. 'worker backend', for messages)."""
    if not isinstance(name, str) or not _MODULE_NAME.fullmatch(name):
        raise PluginError(f'a {what} is named by a module (a name or a dotted path), not {name!r}')
    module_name = plugin_module(folder, name)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ''
        if module_name == missing or module_name.startswith(missing + '.'):
            raise PluginError(
                f'no {what} {name!r}: module {module_name} does not exist '
                f'(built in: {", ".join(builtin_plugins(folder))}; or a dotted module path)'
            ) from None
        raise
    found = getattr(module, factory, None)
    if found is None:
        raise PluginError(f'{what} module {module_name} has no {factory}')
    return found
