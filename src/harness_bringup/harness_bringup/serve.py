"""`harness serve`: the station (worker and skill server) in this process, for a graph whose
other nodes run elsewhere (a kernel and driver started by launch files, a test, a notebook)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import rclpy
import yaml
from harness_skills.skill_server_node import SkillServer
from harness_types.config import GraphConfig
from harness_types.plugins import PluginError
from harness_types.process import leave_graph
from harness_worker.worker_node import WorkerNode
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.utilities import get_default_context

from harness_bringup.domain import use_discovery_profile


def parameter_overrides(ros_args: list[str]) -> list[tuple[str | None, str, str]]:
    """The (node, parameter, value) of each `-p [node:]name:=value` among ROS arguments; node
    is None where the override names none or a wildcard (it applies to every node)."""
    found = []
    for flag, value in zip(ros_args, ros_args[1:], strict=False):
        if flag not in ('-p', '--param') or ':=' not in value:
            continue
        target, text = value.split(':=', 1)
        node, _, name = target.rpartition(':')
        node = node.lstrip('/')
        found.append((None if node in ('', '*', '**') else node, name, text))
    return found


UNDECLARED = object()  # value_of's answer for a parameter a node does not declare


def override_problem(
    ros_args: list[str], value_of: Callable[[str, str], Any], nodes: Collection[str]
) -> str | None:
    """What is wrong with the first `-p` override, or None: it names no declared parameter of
    the nodes it applies to (`value_of(node, name)` is UNDECLARED), or a node holds another
    value than the number or truth value it gives (where a parameter file sets it too, rcl
    keeps the file's number over a text override without a word)."""
    for node, name, text in parameter_overrides(ros_args):
        if node is not None and node not in nodes:
            return f'-p {node}:{name}: no node {node!r} here (the station is {", ".join(nodes)})'
        targets = list(nodes) if node is None else [node]
        held = {t: value_of(t, name) for t in targets}
        held = {t: v for t, v in held.items() if v is not UNDECLARED}
        if not held:
            return f'-p {name}: no such parameter of {" or ".join(targets)}'
        for target, value in held.items():
            if not _given(value, text):
                kind = {bool: 'true or false', int: 'an integer', float: 'a number'}
                return (
                    f'-p {name}:={text}: {target}.{name} must be {kind[type(value)]}; it kept '
                    f'{value!r}'
                )
    return None


def _given(held: Any, text: str) -> bool:
    """Whether a parameter holding `held` holds the override `text`, read as rcl reads it (a
    YAML value: `yes` is true, `0x10` is 16); for numbers and truth values, text and lists
    and the rest are taken as given."""
    if not isinstance(held, bool | int | float):
        return True
    try:
        given = yaml.safe_load(text)
    except yaml.YAMLError:
        return False
    if isinstance(held, bool) or isinstance(given, bool):
        return type(given) is type(held) and given == held
    if isinstance(given, str):  # (YAML 1.1 reads 2.5e1 as text; rcl as a number)
        try:
            given = float(given)
        except ValueError:
            return False
    return isinstance(given, int | float) and given == held


def serve(config: GraphConfig, ros_args: list[str], say: Callable[[str], None]) -> int:
    """Serve until interrupted; 2 when a node cannot start (one line says why). The parameter
    file the nodes start from is there while they serve, and removed after."""
    use_discovery_profile()
    with tempfile.TemporaryDirectory(prefix='harness-serve-') as folder:
        # keyed for any namespace: a `-r __ns:=/NS` in ros_args must not leave it unread
        params = config.write(Path(folder) / 'params.yaml', any_namespace=True)
        return _serve(params, ros_args, say)


def _serve(params: Path, ros_args: list[str], say: Callable[[str], None]) -> int:
    try:
        rclpy.init(args=['harness', '--ros-args', '--params-file', str(params), *ros_args])
    except Exception as exc:  # rclpy's own errors (unknown ROS arguments, a bad domain id)
        given = ' '.join(ros_args) or 'none'
        print(
            f'harness: ROS did not start (ROS arguments: {given}): {type(exc).__name__}: {exc}',
            file=sys.stderr,
        )
        return 2
    try:
        worker = WorkerNode()
        skills = SkillServer()
        skills.station.use_local(worker)
    except (PluginError, ValueError, ParameterException) as exc:  # a -p of the wrong type too
        print(f'harness: {type(exc).__name__}: {" ".join(str(exc).split())}', file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    # rclpy keeps an override no node declares without a word (a misspelt -p would be ignored),
    # and rcl one of another type than the parameter file's value.
    declared = {node.get_name(): node for node in (worker, skills)}

    def value_of(node: str, name: str) -> Any:
        held = declared[node]
        return held.get_parameter(name).value if held.has_parameter(name) else UNDECLARED

    if problem := override_problem(ros_args, value_of, declared):
        print(f'harness: {problem}', file=sys.stderr)
        worker.close()
        leave_graph([worker, skills], get_default_context())
        return 2
    executor = MultiThreadedExecutor(num_threads=6)
    executor.add_node(worker)
    executor.add_node(skills)
    say(
        f'serving worker/* and skills/* (backend {worker.config.backend}, parameters '
        f'{params}); Ctrl-C to stop'
    )
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):  # Ctrl-C, SIGTERM
        pass
    finally:
        worker.close()
        executor.shutdown()
        leave_graph([worker, skills], get_default_context())
    return 0
