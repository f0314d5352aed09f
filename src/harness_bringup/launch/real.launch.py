"""The real ARX X5 station: ros2_control with the arms' hardware plugin (default: the
embodiment's `real.plugin`, arx_ros2_control/ArxX5Hardware, one system per arm on its CAN bus),
its controllers, robot_state_publisher, the camera topics remapped from your drivers', and the
harness's station on the ros2_control backend.

    ros2 launch harness_bringup real.launch.py \\
        cam_head:=/camera/head/color cam_left_wrist:=/camera/left/color \\
        cam_right_wrist:=/camera/right/color [hardware_plugin:=PKG/CLASS] [config:=FILE]

A camera argument is the prefix of that camera driver's topics: PREFIX/image_raw,
PREFIX/camera_info and (aligned depth) PREFIX/depth/image_raw.
"""

import sys
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    CAMERAS,
    controller_spawners,
    harness_station,
    robot_description,
    ros2_control_nodes,
    station_arguments,
)


def generate_launch_description() -> LaunchDescription:
    plugin = LaunchConfiguration('hardware_plugin')
    description = robot_description('real', [' hardware_plugin:=', plugin])
    remappings = []
    for cam in CAMERAS:
        prefix = LaunchConfiguration(cam)
        remappings += [
            (f'cameras/{cam}/image_raw', [prefix, '/image_raw']),
            (f'cameras/{cam}/camera_info', [prefix, '/camera_info']),
            (f'cameras/{cam}/depth/image_raw', [prefix, '/depth/image_raw']),
        ]
    return LaunchDescription(
        [
            *station_arguments(),
            DeclareLaunchArgument(
                'hardware_plugin',
                default_value='',
                description="the arms' ros2_control hardware plugin (empty: the embodiment "
                "YAML's real.plugin, arx_ros2_control/ArxX5Hardware)",
            ),
            *[
                DeclareLaunchArgument(cam, default_value=f'/{cam}', description=f'{cam} topics')
                for cam in CAMERAS
            ],
            *ros2_control_nodes(description),
            *controller_spawners(use_sim_time=False),
            *harness_station(
                'ros2_control', use_sim_time=False, remappings=remappings, namespaced=False
            ),
        ]
    )
