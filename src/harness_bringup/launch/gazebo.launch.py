"""The station in Gazebo (gz sim): the world, the robot spawned from its description (with
gz_ros2_control and camera sensors), ros_gz_bridge for /clock and the cameras, the
controllers, robot_state_publisher, and the harness's station on the ros2_control backend
following /clock.

    ros2 launch harness_bringup gazebo.launch.py [config:=FILE]
"""

import sys
from pathlib import Path

from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.substitutions import PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    CAMERAS,
    controller_spawners,
    harness_station,
    robot_description,
    station_arguments,
)


def generate_launch_description() -> LaunchDescription:
    description = robot_description('gazebo')
    world = PathJoinSubstitution([FindPackageShare('arx_x5_description'), 'worlds', 'station.sdf'])
    bridged = ['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock']
    for cam in CAMERAS:
        bridged += [
            f'/cameras/{cam}/image_raw@sensor_msgs/msg/Image[gz.msgs.Image',
            f'/cameras/{cam}/depth/image_raw@sensor_msgs/msg/Image[gz.msgs.Image',
            f'/cameras/{cam}/camera_info@sensor_msgs/msg/CameraInfo[gz.msgs.CameraInfo',
        ]
    return LaunchDescription(
        [
            *station_arguments(),
            IncludeLaunchDescription(
                PathJoinSubstitution(
                    [FindPackageShare('ros_gz_sim'), 'launch', 'gz_sim.launch.py']
                ),
                launch_arguments={
                    'gz_args': [world, ' -r'],
                    'on_exit_shutdown': 'true',
                }.items(),
            ),
            Node(
                package='robot_state_publisher',
                executable='robot_state_publisher',
                parameters=[description, {'use_sim_time': True}],
                output='screen',
            ),
            Node(
                package='ros_gz_sim',
                executable='create',
                arguments=['-topic', 'robot_description', '-name', 'arx_x5_station'],
                output='screen',
            ),
            Node(
                package='ros_gz_bridge',
                executable='parameter_bridge',
                name='ros_gz_bridge',
                arguments=bridged,
                parameters=[{'use_sim_time': True}],
                output='screen',
            ),
            *controller_spawners(use_sim_time=True),
            *harness_station('ros2_control', use_sim_time=True, namespaced=False),
        ]
    )
