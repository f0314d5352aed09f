"""How every plugin is found: a plugin is one module in its kind's folder (a package such as
`harness_worker.backends`), named by its file; a backend may also be any importable module
named by its dotted path (one kept outside this repository). The module defines the kind's
factory (a worker backend's `make_station`, a perception backend's `make_backend`, a bench
task's `TASK`).

Worker backends, perception backends and bench tasks are found this way; skills are names in
the program API's table and policies entries in the catalogue (configuration, no code)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import re
import sys
from pathlib import Path
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


def plugin_problem(folder: str, name: str, factory: str) -> str:
    """Why plugin `name` could not be loaded, as far as can be told without importing it (a
    configuration is checked before the graph that loads it starts): no such module, or one
    whose source binds no `factory` at its top level (one this process imported already: that
    has none). '' when none is seen."""
    if not isinstance(name, str) or not _MODULE_NAME.fullmatch(name):
        return f'a plugin is named by a module (a name or a dotted path), not {name!r}'
    module = plugin_module(folder, name)
    loaded = sys.modules.get(module)
    if loaded is not None:  # (a warm station checks each episode's: a parse took ~15 ms)
        try:
            found = getattr(loaded, factory, None)
        except Exception:  # (a module __getattr__ that raises: its import will say)
            found = True
        return '' if found is not None else f'module {module} has no {factory}'
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):  # a parent package that does not exist
        spec = None
    if spec is None:
        return (
            f'no module {module} for {name!r} (built in: {", ".join(builtin_plugins(folder))}; '
            'or a dotted module path)'
        )
    origin = spec.origin or ''
    if origin.endswith('.py') and not _may_bind(Path(origin), factory):
        return f'module {module} has no {factory}'
    return ''


def _may_bind(source: Path, name: str) -> bool:
    """Whether the module in `source` binds `name` at its top level (or might: a star import,
    a module __getattr__, a file that cannot be read or parsed here)."""
    try:
        tree = ast.parse(source.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return True  # (importing it will say what is wrong)
    for node in tree.body:
        # A definition binds its name; any other statement whatever it names anywhere in it
        # (a binding under if, try or with is taken as possible).
        inner = [node] if isinstance(node, _DEFINITIONS) else ast.walk(node)
        for n in inner:
            if isinstance(n, _DEFINITIONS):
                bound = {n.name}
            elif isinstance(n, ast.Import | ast.ImportFrom):
                bound = {(a.asname or a.name).split('.')[0] for a in n.names}
            elif isinstance(n, ast.Name):
                bound = {n.id}
            else:
                continue
            if name in bound or '*' in bound or '__getattr__' in bound:
                return True
    return False


_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


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
