"""The launch files: without launch_ros (not on PyPI) each is compiled and checked statically:
every node it starts (directly or through _common's helpers) is an entry point of a
workspace package or a package harness_bringup depends on, every parameter passed to a
harness node is declared by that node's section of the configuration, every file it names
is installed, and the position controller drives the joints the ros2_control backend
commands, in that order. With launch_ros installed, each builds its description."""

import ast
import importlib.util
import re
import xml.etree.ElementTree as ET
from dataclasses import fields
from pathlib import Path

import pytest
import yaml
from harness_types.config import GraphConfig

SRC = Path(__file__).resolve().parents[2]
LAUNCH_DIR = SRC / 'harness_bringup' / 'launch'
LAUNCH = sorted(LAUNCH_DIR.glob('*.launch.py'))
COMMON = LAUNCH_DIR / '_common.py'
SECTIONS = {name: {f.name for f in fields(type(s))} for name, s in GraphConfig().sections().items()}
WORKSPACE = {p.parent.name for p in SRC.glob('*/package.xml')}


def exec_depends() -> set[str]:
    root = ET.parse(SRC / 'harness_bringup' / 'package.xml').getroot()
    return {e.text for e in root.iter('exec_depend')}


def entry_points(package: str) -> set[str]:
    setup = (SRC / package / 'setup.py').read_text()
    return set(re.findall(r"'([a-z_0-9]+) = [a-z_.0-9]+:main'", setup))


def node_calls(tree: ast.AST) -> list[dict]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, 'id', '') == 'Node':
            out.append({k.arg: k.value for k in node.keywords})
    return out


def imported_from_common(tree: ast.AST) -> set[str]:
    return {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == '_common'
        for alias in node.names
    }


def common_definitions() -> dict[str, ast.AST]:
    """_common's functions and module-level names."""
    tree = ast.parse(COMMON.read_text())
    out: dict[str, ast.AST] = {}
    for n in tree.body:
        if isinstance(n, ast.FunctionDef):
            out[n.name] = n
        elif isinstance(n, ast.Assign):
            out.update({t.id: n for t in n.targets if isinstance(t, ast.Name)})
    return out


def nodes_started_by(path: Path) -> list[dict]:
    """The Node(...) calls of the file and of the _common helpers it imports."""
    tree = ast.parse(path.read_text())
    found = node_calls(tree)
    helpers = common_definitions()
    for name in imported_from_common(tree):
        assert name in helpers, f'{path.name} imports {name}, which _common does not define'
        found += node_calls(helpers[name])
    return found


@pytest.mark.parametrize('path', LAUNCH, ids=lambda p: p.name)
def test_every_node_exists_and_every_harness_parameter_is_declared(path):
    compile(path.read_text(), str(path), 'exec')
    found = nodes_started_by(path)
    assert found, f'{path.name} starts no node'
    for node in found:
        package = ast.literal_eval(node['package'])
        executable = ast.literal_eval(node['executable'])
        if package not in WORKSPACE:
            assert package in exec_depends(), f'harness_bringup does not depend on {package}'
            continue
        assert executable in entry_points(package), f'{package} has no {executable}'
        name = ast.literal_eval(node['name'])
        assert name in SECTIONS, f'{name} has no section in the configuration'
        for entry in getattr(node.get('parameters'), 'elts', []):
            if isinstance(entry, ast.Dict):
                for key in entry.keys:
                    key = ast.literal_eval(key)
                    assert key in SECTIONS[name] or key == 'use_sim_time', (name, key)


def installed_files(package: str) -> list[str]:
    """Each directory or file the package's CMakeLists installs into share/."""
    text = (SRC / package / 'CMakeLists.txt').read_text()
    return re.findall(r'install\(DIRECTORY ([^)]*?) DESTINATION', text)


@pytest.mark.parametrize('path', [*LAUNCH, COMMON], ids=lambda p: p.name)
def test_every_description_file_named_is_installed(path):
    text = path.read_text()
    named = re.findall(r"FindPackageShare\('arx_x5_description'\), '([a-z_]+)', '([a-z_.]+)'", text)
    installed = ' '.join(installed_files('arx_x5_description'))
    for folder, name in named:
        assert folder in installed, f'{folder}/ is not installed'
        assert (SRC / 'arx_x5_description' / folder / name).is_file(), f'{folder}/{name}'


def test_the_position_controller_drives_the_backends_joints_in_its_order():
    from arx_x5_description.embodiment import load_embodiment
    from harness_worker.backends.ros2_control import command_joints

    controllers = yaml.safe_load(
        (SRC / 'arx_x5_description' / 'config' / 'controllers.yaml').read_text()
    )
    joints = controllers['station_position_controller']['ros__parameters']['joints']
    assert joints == command_joints(load_embodiment())


@pytest.mark.skipif(
    importlib.util.find_spec('launch_ros') is None, reason='launch_ros is not installed here'
)
@pytest.mark.parametrize('path', LAUNCH, ids=lambda p: p.name)
def test_the_description_builds(path):
    spec = importlib.util.spec_from_file_location(path.stem.replace('.', '_'), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.generate_launch_description().entities


@pytest.mark.parametrize('path', LAUNCH, ids=lambda p: p.name)
def test_a_launch_whose_ros2_control_side_stays_at_the_root_refuses_a_namespace(path):
    """namespace:= moved the harness's nodes alone on the ros2_control launches (their
    controller manager, spawners and bridge stay at the root): the worker waited for joint
    states on /NS/joint_states that nothing published. Those launches refuse it (and do not
    advertise it); the MuJoCo one, whose graph is the harness's alone, takes it."""
    text = path.read_text()
    if "harness_station('ros2_control'" not in text and "'ros2_control', use_sim" not in text:
        return
    assert 'namespaced=False' in text
    assert 'namespace:=' not in text.split('"""')[1]  # (its usage line)
