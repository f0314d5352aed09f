"""ros2_control with mock hardware (mock_components/GenericSystem), its controllers,
robot_state_publisher, and the harness's station on the ros2_control backend: the harness's
side of the real arm, without the arm.

    ros2 launch harness_bringup mock_hardware.launch.py [config:=FILE] [namespace:=NS]
"""

import sys
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch_ros.actions import Node

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    controller_spawners,
    controllers_file,
    default_config,
    harness_station,
    robot_description,
)


def generate_launch_description() -> LaunchDescription:
    description = robot_description('mock')
    return LaunchDescription(
        [
            DeclareLaunchArgument('config', default_value=default_config()),
            DeclareLaunchArgument('namespace', default_value=''),
            Node(
                package='robot_state_publisher',
                executable='robot_state_publisher',
                parameters=[description],
                output='screen',
            ),
            Node(
                package='controller_manager',
                executable='ros2_control_node',
                parameters=[description, controllers_file()],
                output='screen',
            ),
            *controller_spawners(use_sim_time=False),
            *harness_station('ros2_control', use_sim_time=False),
        ]
    )
