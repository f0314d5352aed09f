"""The embedded graph's station (what `harness run` starts in its process): the worker on
the MuJoCo backend and the skill server, with config/harness.yaml.

    ros2 launch harness_bringup mujoco.launch.py [config:=FILE] [namespace:=NS]
"""

import sys
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import default_config, harness_station


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            DeclareLaunchArgument('config', default_value=default_config()),
            DeclareLaunchArgument('namespace', default_value=''),
            *harness_station('mujoco', use_sim_time=False),
        ]
    )
