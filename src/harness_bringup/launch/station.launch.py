"""The station (worker and skill server) with the harness's parameters, as `harness serve`
starts it, for a ROS 2 installation:

    ros2 launch harness_bringup station.launch.py [config:=FILE] [namespace:=NS] [backend:=NAME]

Episodes then run against it: each episode's kernel (`ros2 run harness_kernel kernel`) and the
driver join the same domain and namespace.
"""

import os
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def default_config() -> str:
    """$HARNESS_CONFIG, else the workspace's config/harness.yaml (symlink-install), else ''."""
    if os.environ.get('HARNESS_CONFIG'):
        return os.environ['HARNESS_CONFIG']
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / 'config' / 'harness.yaml'
        if candidate.is_file():
            return str(candidate)
    return ''


def generate_launch_description() -> LaunchDescription:
    config = LaunchConfiguration('config')
    namespace = LaunchConfiguration('namespace')
    backend = LaunchConfiguration('backend')
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                'config', default_value=default_config(), description='config/harness.yaml'
            ),
            DeclareLaunchArgument('namespace', default_value='', description='graph namespace'),
            DeclareLaunchArgument(
                'backend', default_value='mujoco', description='worker backend (mujoco | ...)'
            ),
            Node(
                package='harness_worker',
                executable='worker',
                name='worker',
                namespace=namespace,
                parameters=[config, {'backend': backend}],
                output='screen',
            ),
            Node(
                package='harness_skills',
                executable='skill_server',
                name='skill_server',
                namespace=namespace,
                parameters=[config],
                output='screen',
            ),
        ]
    )
