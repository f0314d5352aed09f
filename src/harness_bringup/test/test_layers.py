"""Package imports point one way: bringup -> driver (and the expert policy) -> kernel ->
skills -> worker -> shield (and policy, the protocol), with the messages, the description, the
bench tasks and the shared types at the bottom."""

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]
BOTTOM = {'harness_msgs', 'arx_x5_description', 'harness_bench', 'harness_types', 'tf2_msgs'}
RANK = {
    'harness_shield': 1,
    'harness_reactive': 1,
    'harness_policy': 1,
    'harness_perception': 1,
    'harness_recording': 1,
    'harness_worker': 2,
    'harness_testing': 3,
    'harness_skills': 3,
    'harness_kernel': 4,
    'harness_driver': 5,
    'harness_expert': 5,
    'harness_operator': 6,
    'harness_learning': 6,
    'harness_bringup': 7,
}
# The bottom packages use nothing of the harness but each other's data (the types' conversions
# need the messages; the tasks' verifier claims judge the shared robot state and located
# objects).
BOTTOM_MAY_USE = {'harness_types': {'harness_msgs'}, 'harness_bench': {'harness_types'}}


def imports(path: Path) -> set[str]:
    """The harness packages a module imports: import statements anywhere in it (functions
    too), and importlib.import_module / __import__ of a constant name."""
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split('.')[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split('.')[0])
        elif isinstance(node, ast.Call) and _dynamic_import(node.func) and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                found.add(first.value.split('.')[0])
    return {name for name in found if name in RANK or name in BOTTOM}


def _dynamic_import(func: ast.expr) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == 'import_module') or (
        isinstance(func, ast.Name) and func.id in ('import_module', '__import__')
    )


def modules():
    for package in sorted(RANK) + sorted(BOTTOM - {'tf2_msgs', 'harness_msgs'}):
        for path in sorted((SRC / package / package).rglob('*.py')):
            yield package, path


def test_every_import_points_down():
    wrong = []
    for package, path in modules():
        for used in imports(path) - {package}:
            if package in BOTTOM:
                ok = used in BOTTOM_MAY_USE.get(package, set())
            else:
                ok = used in BOTTOM or RANK[used] < RANK[package]
            if not ok:
                wrong.append(f'{path.relative_to(SRC)} imports {used}')
    assert not wrong, '\n'.join(wrong)


WORDS = {
    'messages': {'harness_msgs'},
    'description': {'arx_x5_description'},
    'types': {'harness_types'},
    'bench': {'harness_bench'},
    'bottom': BOTTOM,
    'everything': set(RANK) | BOTTOM,
} | {name.removeprefix('harness_'): {name} for name in RANK}


def table() -> dict[str, set[str]]:
    """docs/ARCHITECTURE.md's package table: what each package may import (its last column,
    the words outside parentheses)."""
    text = (SRC.parent / 'docs' / 'ARCHITECTURE.md').read_text()
    allowed = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) != 3 or not cells[0].startswith('`'):
            continue
        package = cells[0].strip('`')
        words = re.sub(r'\([^)]*\)', '', cells[2]).replace(',', ' ').split()
        unknown = [w for w in words if w not in WORDS and w != '-']
        assert not unknown, f'{package}: the table names {unknown}'
        allowed[package] = set().union(*(WORDS[w] for w in words if w != '-'))
    return allowed


def forbidden(found, allowed: dict[str, set[str]]) -> list[str]:
    """Each import of `found` ((package, path) pairs) that its package's row does not allow."""
    wrong = []
    for package, path in found:
        for used in imports(path) - {package} - {'tf2_msgs'}:
            if used not in allowed[package]:
                wrong.append(f'{path.name} in {package} imports {used}')
    return wrong


def test_every_import_is_one_the_architecture_table_allows():
    """The table in docs/ARCHITECTURE.md, not only the ranks: a package imports only what its
    row names (a worker constant in the kernel went through the ranks)."""
    allowed = table()
    assert set(allowed) == set(RANK) | BOTTOM - {'tf2_msgs'}
    wrong = forbidden(modules(), allowed)
    assert not wrong, '\n'.join(wrong)


def test_a_planted_forbidden_import_is_caught(tmp_path):
    """A kernel module that imports the worker (the ranks allow it, the table does not), one
    that imports the driver inside a function, and one that imports it by name at run time:
    each is reported; a module that imports only what its row names is not."""
    allowed = table()
    planted = {
        'ranks.py': 'from harness_worker.kinematics import solve\n',
        'late.py': 'def f():\n    import harness_driver.episode\n',
        'dynamic.py': 'import importlib\nimportlib.import_module("harness_operator.session")\n',
        'fine.py': 'from harness_skills.skill_table import SKILLS\nimport harness_types\n',
    }
    for name, text in planted.items():
        (tmp_path / name).write_text(text)
    wrong = forbidden([('harness_kernel', tmp_path / n) for n in sorted(planted)], allowed)
    assert wrong == [
        'dynamic.py in harness_kernel imports harness_operator',
        'late.py in harness_kernel imports harness_driver',
        'ranks.py in harness_kernel imports harness_worker',
    ]


def test_the_check_sees_an_upward_import(tmp_path):
    module = tmp_path / 'm.py'
    module.write_text('from harness_driver.episode import Episode\nimport harness_worker.worker\n')
    assert imports(module) == {'harness_driver', 'harness_worker'}


def test_no_core_module_imports_rclpy():
    """Pure cores: only the nodes (and bringup) touch rclpy."""
    # Nodes, the skill server's ROS ports, the lanes (a service with a node of its own at each
    # end), and the ros2_control backend (ROS is its robot).
    allowed = {'_node.py', 'ros_port.py', 'harness_types/lanes.py', 'backends/ros2_control.py'}
    offenders = []
    for package, path in modules():
        if package == 'harness_bringup' or any(str(path).endswith(a) for a in allowed):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or '']
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n.split('.')[0] == 'rclpy' for n in names):
                offenders.append(str(path.relative_to(SRC)))
    assert not offenders, offenders
