"""`harness serve`: the station (worker and skill server) in this process, for a graph whose
other nodes run elsewhere (a kernel and driver started by launch files, a test, a notebook)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path

import rclpy
from harness_skills.skill_server_node import SkillServer
from harness_types.config import GraphConfig
from harness_types.plugins import PluginError
from harness_types.process import leave_graph
from harness_worker.worker_node import WorkerNode
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.utilities import get_default_context

from harness_bringup.domain import use_discovery_profile


def parameter_overrides(ros_args: list[str]) -> list[tuple[str | None, str]]:
    """The (node, parameter) of each `-p [node:]name:=value` among ROS arguments; node is None
    where the override names none or a wildcard (it applies to every node)."""
    found = []
    for flag, value in zip(ros_args, ros_args[1:], strict=False):
        if flag not in ('-p', '--param') or ':=' not in value:
            continue
        target = value.split(':=', 1)[0]
        node, _, name = target.rpartition(':')
        node = node.lstrip('/')
        found.append((None if node in ('', '*', '**') else node, name))
    return found


def unknown_overrides(
    ros_args: list[str], declares: Callable[[str, str], bool], nodes: Collection[str]
) -> str | None:
    """What is wrong with the first `-p` override that names no declared parameter of the
    nodes it applies to (`declares(node, name)`), or None when every one names one."""
    for node, name in parameter_overrides(ros_args):
        if node is not None and node not in nodes:
            return f'-p {node}:{name}: no node {node!r} here (the station is {", ".join(nodes)})'
        targets = list(nodes) if node is None else [node]
        if not any(declares(target, name) for target in targets):
            return f'-p {name}: no such parameter of {" or ".join(targets)}'
    return None


def serve(config: GraphConfig, ros_args: list[str], say: Callable[[str], None]) -> int:
    """Serve until interrupted; 2 when a node cannot start (one line says why). The parameter
    file the nodes start from is there while they serve, and removed after."""
    use_discovery_profile()
    with tempfile.TemporaryDirectory(prefix='harness-serve-') as folder:
        return _serve(config.write(Path(folder) / 'params.yaml'), ros_args, say)


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
    # rclpy keeps an override no node declares without a word: a misspelt -p would be ignored.
    declared = {node.get_name(): node for node in (worker, skills)}
    if problem := unknown_overrides(ros_args, lambda n, p: declared[n].has_parameter(p), declared):
        print(f'harness: {problem}', file=sys.stderr)
        worker.worker.close()
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
        worker.worker.close()
        executor.shutdown()
        leave_graph([worker, skills], get_default_context())
    return 0
