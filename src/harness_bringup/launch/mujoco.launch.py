"""The embedded graph's station (what `harness run` starts in its process): the worker on
the MuJoCo backend and the skill server, with config/harness.yaml.

    ros2 launch harness_bringup mujoco.launch.py [config:=FILE] [namespace:=NS]
"""

import sys
from pathlib import Path

from launch import LaunchDescription

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import harness_station, station_arguments


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [
            *station_arguments(),
            *harness_station('mujoco', use_sim_time=False),
        ]
    )
