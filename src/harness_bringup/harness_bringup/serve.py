"""`harness serve`: the station (worker and skill server) in this process, for a graph whose
other nodes run elsewhere (a kernel and driver started by launch files, a test, a notebook)."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
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


def serve(config: GraphConfig, ros_args: list[str], say: Callable[[str], None]) -> int:
    """Serve until interrupted; 2 when a node cannot start (one line says why)."""
    use_discovery_profile()
    params = config.write(Path(tempfile.mkdtemp(prefix='harness-serve-')) / 'params.yaml')
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
