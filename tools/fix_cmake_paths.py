"""Point the ROS wheels' CMake export files at this virtual environment's Python and numpy.

The PyPI wheels were built in a manylinux image and hard-code its paths
(/opt/python/cp311-cp311/...). Each file that still names them is rewritten into a new file
that is renamed over the old one: uv and pip may hardlink files from their caches, and an
in-place edit would change the cache too. Running it again changes nothing.
"""

import os
import sys
import sysconfig
from pathlib import Path

BUILD_PREFIX = '/opt/python/cp311-cp311'


def replacements() -> list[tuple[str, str]]:
    import numpy

    include = sysconfig.get_paths()['include']
    purelib = sysconfig.get_paths()['purelib']
    return [
        (f'{BUILD_PREFIX}/lib/python3.11/site-packages/numpy/_core/include', numpy.get_include()),
        (f'{BUILD_PREFIX}/include/python3.11', include),
        (f'{BUILD_PREFIX}/lib/python3.11/site-packages', purelib),
    ]


def fix(prefix: Path) -> int:
    pairs = replacements()
    changed = 0
    for path in sorted(prefix.glob('share/*/cmake/*.cmake')):
        text = path.read_text()
        if BUILD_PREFIX not in text:
            continue
        for old, new in pairs:
            text = text.replace(old, new)
        tmp = path.with_suffix(path.suffix + '.harness-tmp')
        tmp.write_text(text)
        os.replace(tmp, path)
        changed += 1
    return changed


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit('usage: fix_cmake_paths.py VENV')
    n = fix(Path(sys.argv[1]))
    if n:
        print(f'[setup] rewrote build-machine paths in {n} CMake files', file=sys.stderr)
