"""Expand the station xacro into URDF text (xacro from PyPI; no ROS installation needed)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path

ROS2_CONTROL_CHOICES = ('none', 'mock', 'gazebo', 'real')


def station_xacro_path() -> Path:
    from ament_index_python.packages import get_package_share_directory

    return Path(get_package_share_directory('arx_x5_description')) / 'urdf' / 'station.urdf.xacro'


def station_urdf(ros2_control: str = 'none', config: Path | str | None = None) -> str:
    """The station's URDF; `ros2_control` selects the hardware block (none, mock, gazebo, real).

    Each expansion is kept in the user's cache (`$XDG_CACHE_HOME/harness`, else
    `~/.cache/harness`) under a hash of everything it reads: xacro's version, the xacro files,
    the embodiment file and the arguments. Every process of an episode needs the URDF, and
    xacro takes ~0.1 s; a cache that cannot be written is skipped."""
    import xacro

    if ros2_control not in ROS2_CONTROL_CHOICES:
        raise ValueError(
            f'ros2_control must be one of {ROS2_CONTROL_CHOICES}, got {ros2_control!r}'
        )
    mappings = {'ros2_control': ros2_control}
    if config is not None:
        mappings['config'] = str(config)
    xacro_path = station_xacro_path()
    try:
        cached = user_cache_dir() / f'station-{_inputs_hash(xacro_path, config, mappings)}.urdf'
    except Exception:  # inputs it cannot read or hash (xacro says what is wrong): no cache
        cached = None
    if cached is not None:
        with contextlib.suppress(OSError):
            return cached.read_text()
    text = xacro.process_file(str(xacro_path), mappings=mappings).toxml()
    if cached is not None:
        _keep(cached, text)
    return text


def _keep(path: Path, text: str) -> None:
    """Write `text` to `path` atomically (a reader never sees half a file); skipped when the
    cache cannot be written."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix='.partial')
        try:
            with os.fdopen(fd, 'w') as out:
                out.write(text)
            os.replace(partial, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(partial)


def user_cache_dir() -> Path:
    """The harness's folder in the user's cache (`$XDG_CACHE_HOME/harness`, else
    `~/.cache/harness`): URDF expansions, compiled report templates. It may not exist or be
    writable; every user of it works without it."""
    base = os.environ.get('XDG_CACHE_HOME') or str(Path.home() / '.cache')
    return Path(base) / 'harness'


def _inputs_hash(xacro_path: Path, config: Path | str | None, mappings: dict) -> str:
    """What the expansion reads: the xacro files beside the station's, the embodiment file
    (the default one is in the package's config folder), the arguments, xacro's version."""
    from importlib.metadata import version

    share = xacro_path.parents[1]
    digest = hashlib.sha256()
    digest.update(json.dumps([str(xacro_path), mappings, version('xacro')]).encode())
    files = [p for p in sorted((share / 'urdf').glob('*')) if p.is_file()]
    files += sorted((share / 'config').glob('*.yaml'))
    if config is not None:
        files.append(Path(config))
    for path in files:
        digest.update(str(path).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:24]
