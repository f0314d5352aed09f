"""A plugin is found by its module's name; anything else is refused with what is built in."""

import importlib
import sys

import pytest
from harness_types.plugins import PluginError, builtin_plugins, load_plugin

FOLDER = 'harness_types'  # any package folder will do: its modules are the "plugins"


def test_a_plugin_is_its_modules_factory():
    assert load_plugin('thing', FOLDER, 'plugins', 'load_plugin') is load_plugin
    assert load_plugin('thing', FOLDER, 'harness_types.plugins', 'load_plugin') is load_plugin
    assert 'plugins' in builtin_plugins(FOLDER)


@pytest.mark.parametrize(
    'name,message',
    [
        ('nope', "no thing 'nope': module harness_types.nope does not exist (built in: "),
        ('.x', "is named by a module (a name or a dotted path), not '.x'"),
        ('a..b', 'not'),
        ('', 'not'),
        ('plugins', 'has no make_thing'),
    ],
)
def test_a_name_that_is_no_plugin_says_why(name, message):
    with pytest.raises(PluginError, match=message.replace('(', r'\(').replace(')', r'\)')):
        load_plugin('thing', FOLDER, name, 'make_thing' if name == 'plugins' else 'factory')


def test_a_missing_dependency_of_a_plugin_is_not_a_missing_plugin(tmp_path, monkeypatch):
    (tmp_path / 'numpy_tools_plugin.py').write_text('import numpy_tools_missing_dependency\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match='numpy_tools_missing_dependency'):
        load_plugin('thing', FOLDER, 'numpy_tools_plugin.x', 'factory')


def test_a_plugin_is_found_without_importing_it_and_a_bad_name_is_not(tmp_path, monkeypatch):
    from harness_types.plugins import plugin_problem

    assert plugin_problem(FOLDER, 'plugins', 'load_plugin') == ''
    assert plugin_problem(FOLDER, 'harness_types.plugins', 'load_plugin') == ''
    assert plugin_problem(FOLDER, 'nope', 'f').startswith('no module harness_types.nope')
    assert plugin_problem(FOLDER, 'no_package.x', 'f').startswith('no module no_package.x')
    assert 'not' in plugin_problem(FOLDER, '.x', 'f') and 'not' in plugin_problem(FOLDER, '', 'f')
    # a module that exists but is no plugin of this kind (`--perception harness_types.names`
    # had passed the check and failed in the episode), told from its source without importing
    # it; a binding it might make (a star import, one under try) is taken as possible
    no = plugin_problem(FOLDER, 'harness_types.names', 'make_backend')
    assert no == 'module harness_types.names has no make_backend'
    package = tmp_path / 'outside_plugins'
    package.mkdir()
    (package / '__init__.py').write_text('')
    (package / 'guarded.py').write_text(
        'raise SystemExit("imported")\ntry:\n    from x import make_backend\nexcept ImportError:\n'
        '    pass\n'
    )
    (package / 'star.py').write_text('from outside_plugins.guarded import *\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert plugin_problem(FOLDER, 'outside_plugins.guarded', 'make_backend') == ''
    assert plugin_problem(FOLDER, 'outside_plugins.star', 'make_backend') == ''


def test_an_imported_plugin_is_asked_itself_not_parsed_again(tmp_path, monkeypatch):
    """A warm station checks every episode's configuration: a plugin it has imported already
    is what it would load, so its attributes answer (its source is not parsed again)."""
    from harness_types.plugins import plugin_problem

    package = tmp_path / 'imported_plugins'
    package.mkdir()
    (package / '__init__.py').write_text('')
    (package / 'late.py').write_text('def make_backend():\n    pass\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module('imported_plugins.late')
    try:
        # the source no longer binds it, the imported module still does: that one is loaded
        (package / 'late.py').write_text('')
        assert plugin_problem(FOLDER, 'imported_plugins.late', 'make_backend') == ''
        del module.make_backend
        no = plugin_problem(FOLDER, 'imported_plugins.late', 'make_backend')
        assert no == 'module imported_plugins.late has no make_backend'
    finally:
        sys.modules.pop('imported_plugins.late', None)
        sys.modules.pop('imported_plugins', None)
