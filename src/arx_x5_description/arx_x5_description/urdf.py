"""Expand the station xacro into URDF text (xacro from PyPI; no ROS installation needed)."""

from __future__ import annotations

from pathlib import Path

ROS2_CONTROL_CHOICES = ('none', 'mock', 'gazebo', 'real')


def station_xacro_path() -> Path:
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory('arx_x5_description')) / 'urdf' / 'station.urdf.xacro'


def station_urdf(ros2_control: str = 'none', config: Path | str | None = None) -> str:
    """The station's URDF; `ros2_control` selects the hardware block (none, mock, gazebo, real)."""
    import xacro

    if ros2_control not in ROS2_CONTROL_CHOICES:
        raise ValueError(
            f'ros2_control must be one of {ROS2_CONTROL_CHOICES}, got {ros2_control!r}'
        )
    mappings = {'ros2_control': ros2_control}
    if config is not None:
        mappings['config'] = str(config)
    doc = xacro.process_file(str(station_xacro_path()), mappings=mappings)
    return doc.toxml()
