"""rviz with the station's configuration: the robot from robot_description, /tf, the
cameras and the harness's markers (located objects, regions, shield rejections). Works on a
live graph and on a replayed bag (`ros2 bag play runs/<run>/bag` or `harness replay`).

    ros2 launch harness_bringup rviz.launch.py [use_sim_time:=true]
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def generate_launch_description() -> LaunchDescription:
    config = PathJoinSubstitution([FindPackageShare('arx_x5_description'), 'rviz', 'station.rviz'])
    return LaunchDescription(
        [
            DeclareLaunchArgument('use_sim_time', default_value='true'),
            Node(
                package='rviz2',
                executable='rviz2',
                name='rviz2',
                arguments=['-d', config],
                parameters=[{'use_sim_time': LaunchConfiguration('use_sim_time')}],
                output='screen',
            ),
        ]
    )
