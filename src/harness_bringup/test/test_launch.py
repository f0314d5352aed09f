"""The launch files: without launch_ros (not on PyPI) each is compiled and checked statically:
every executable it starts is an entry point of its package, and every parameter it passes
is declared by that node's section of the configuration. With launch_ros installed, each
builds its description."""

import ast
import importlib.util
import re
from dataclasses import fields
from pathlib import Path

import pytest
from harness_types.config import GraphConfig

SRC = Path(__file__).resolve().parents[2]
LAUNCH = sorted((SRC / 'harness_bringup' / 'launch').glob('*.launch.py'))
SECTIONS = {name: {f.name for f in fields(type(s))} for name, s in GraphConfig().sections().items()}


def entry_points(package: str) -> set[str]:
    setup = (SRC / package / 'setup.py').read_text()
    return set(re.findall(r"'([a-z_]+) = [a-z_.]+:main'", setup))


def nodes(path: Path) -> list[dict]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'Node':
            out.append({k.arg: k.value for k in node.keywords})
    return out


@pytest.mark.parametrize('path', LAUNCH, ids=lambda p: p.name)
def test_every_executable_exists_and_every_parameter_is_declared(path):
    compile(path.read_text(), str(path), 'exec')
    found = nodes(path)
    assert found
    for node in found:
        package = ast.literal_eval(node['package'])
        executable = ast.literal_eval(node['executable'])
        assert executable in entry_points(package), f'{package} has no {executable}'
        name = ast.literal_eval(node['name'])
        for entry in getattr(node.get('parameters'), 'elts', []):
            if isinstance(entry, ast.Dict):
                for key in entry.keys:
                    assert ast.literal_eval(key) in SECTIONS[name], (name, ast.dump(key))


@pytest.mark.skipif(
    importlib.util.find_spec('launch_ros') is None, reason='launch_ros is not installed here'
)
@pytest.mark.parametrize('path', LAUNCH, ids=lambda p: p.name)
def test_the_description_builds(path):
    spec = importlib.util.spec_from_file_location(path.stem.replace('.', '_'), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.generate_launch_description().entities
