"""Shared by the launch files (imported by them as a sibling module): the configuration file
to read, the station's description, and the harness's own nodes."""

import tempfile
from pathlib import Path

from arx_x5_description.embodiment import load_embodiment
from harness_bringup.domain import participant_profile_env
from harness_types.config import config_file, load_config
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import Command, FindExecutable, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

# The station's cameras, from the embodiment file (the one list every consumer reads).
CAMERAS = tuple(load_embodiment().cameras)


def default_config() -> str:
    """$HARNESS_CONFIG, else ./config/harness.yaml, else the workspace's, else '' (the one rule
    the `harness` command follows too)."""
    try:
        path = config_file()
    except FileNotFoundError:  # a stale $HARNESS_CONFIG: config:= may still name the file
        return ''
    return '' if path is None else str(path.resolve())


def station_arguments() -> list:
    """`config` (the parameter file) and `namespace` (of the harness's nodes)."""
    return [
        DeclareLaunchArgument(
            'config', default_value=default_config(), description='the parameter file'
        ),
        DeclareLaunchArgument(
            'namespace', default_value='', description="the harness's nodes' namespace"
        ),
    ]


def robot_description(hardware: str, extra: list | None = None) -> dict:
    """The station's URDF from its xacro, with the <ros2_control> block for `hardware`."""
    xacro_file = PathJoinSubstitution(
        [FindPackageShare('arx_x5_description'), 'urdf', 'station.urdf.xacro']
    )
    command = [FindExecutable(name='xacro'), ' ', xacro_file, f' ros2_control:={hardware}']
    return {'robot_description': ParameterValue(Command(command + (extra or [])), value_type=str)}


def controllers_file():
    return PathJoinSubstitution(
        [FindPackageShare('arx_x5_description'), 'config', 'controllers.yaml']
    )


# A launch whose ros2_control side (controller manager, spawners, robot_state_publisher, a
# simulator's bridge) stays in the root namespace: namespace:= would move the harness's nodes
# alone, away from the joint states and commands they need.
ROOT_NAMESPACE_ONLY = (
    "namespace:={namespace}: this launch's ros2_control nodes stay in the root namespace, so "
    "the harness's nodes under {namespace} would not reach them; run each station in a ROS "
    'domain of its own (ROS_DOMAIN_ID) instead (mujoco.launch.py takes namespace:=)'
)


def harness_station(
    backend: str, use_sim_time: bool, remappings: list | None = None, namespaced: bool = True
) -> list:
    """The worker (with `backend`) and the skill server, with the `config` file and the
    harness's Fast DDS profile (unless the user set one): camera views go through it in
    megabytes (domain.participant_profile_env). The file is read by the harness's loader (a
    bad one stops the launch, saying why) and rewritten keyed `/**/worker`, ...: its plain
    node-name keys would not reach the nodes under `namespace` (as nav2_bringup rewrites its
    file under its root key). `namespaced`: the launch's other nodes follow `namespace`; when
    they do not, a namespace stops the launch, saying why."""

    def nodes(context) -> list:
        if not namespaced and (asked := LaunchConfiguration('namespace').perform(context)):
            raise RuntimeError(ROOT_NAMESPACE_ONLY.format(namespace=asked))
        # no config:= and no file found (a stale $HARNESS_CONFIG): config_file says why, as
        # the harness command does, rather than the station starting on every default
        named = LaunchConfiguration('config').perform(context) or config_file()
        config = load_config(named)
        folder = Path(tempfile.mkdtemp(prefix='harness-launch-'))
        params = str(config.write(folder / 'params.yaml', any_namespace=True))
        namespace = LaunchConfiguration('namespace')
        return [
            Node(
                package='harness_worker',
                executable='worker',
                name='worker',
                namespace=namespace,
                parameters=[params, {'backend': backend, 'use_sim_time': use_sim_time}],
                remappings=remappings or [],
                additional_env=participant_profile_env(),
                output='screen',
            ),
            Node(
                package='harness_skills',
                executable='skill_server',
                name='skill_server',
                namespace=namespace,
                parameters=[params, {'use_sim_time': use_sim_time}],
                additional_env=participant_profile_env(),
                output='screen',
            ),
        ]

    return [OpaqueFunction(function=nodes)]


def controller_spawners(use_sim_time: bool) -> list:
    return [
        Node(
            package='controller_manager',
            executable='spawner',
            arguments=[name, '--controller-manager', '/controller_manager'],
            parameters=[{'use_sim_time': use_sim_time}],
            output='screen',
        )
        for name in ('joint_state_broadcaster', 'station_position_controller')
    ]


def ros2_control_nodes(description: dict) -> list:
    """robot_state_publisher and ros2_control_node on the description, with the controllers."""
    return [
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
    ]
