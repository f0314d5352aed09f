"""ros2_control with mock hardware (mock_components/GenericSystem), its controllers,
robot_state_publisher, and the harness's station on the ros2_control backend: the harness's
side of the real arm, without the arm.

    ros2 launch harness_bringup mock_hardware.launch.py [config:=FILE]
"""

import sys
from pathlib import Path

from launch import LaunchDescription

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    controller_spawners,
    harness_station,
    robot_description,
    ros2_control_nodes,
    station_arguments,
)


def generate_launch_description() -> LaunchDescription:
    description = robot_description('mock')
    return LaunchDescription(
        [
            *station_arguments(),
            *ros2_control_nodes(description),
            *controller_spawners(use_sim_time=False),
            *harness_station('ros2_control', use_sim_time=False, namespaced=False),
        ]
    )
