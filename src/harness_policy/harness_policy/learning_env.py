"""Where LeRobot and torch run: the learning extra's own virtual environment (`.venv-learning`,
installed by `tools/setup.sh --learning` from requirements-learning.txt; LeRobot's pins differ
from the workspace's). Training and serving a trained checkpoint run its Python with the
workspace's packages on PYTHONPATH (install/setup.bash), so they import the harness too."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ENV_VAR = 'HARNESS_LEARNING_PYTHON'  # a Python with lerobot, instead of .venv-learning's


class LearningEnvError(RuntimeError):
    """The learning extra is missing and could not be installed; the message says why."""


def workspace_root() -> Path:
    """The workspace (this file is src/harness_policy/harness_policy/learning_env.py there;
    colcon's symlink install points back to it)."""
    return Path(__file__).resolve().parents[3]


def learning_python() -> str | None:
    """The learning environment's Python, or None when it is not installed."""
    given = os.environ.get(ENV_VAR)
    if given:
        return given
    python = workspace_root() / '.venv-learning' / 'bin' / 'python'
    return str(python) if python.is_file() and os.access(python, os.X_OK) else None


def ensure_learning_python(say=print) -> str:
    """The learning environment's Python, installing it first when it is missing (minutes:
    torch with its CUDA libraries is ~8 GB)."""
    python = learning_python()
    if python is not None:
        return python
    setup = workspace_root() / 'tools' / 'setup.sh'
    if not setup.is_file():
        raise LearningEnvError(
            f'the learning extra is not installed and {setup} is missing: install lerobot==0.4.4 '
            f'into a Python 3.11 environment and set {ENV_VAR} to its python'
        )
    say('installing the learning extra (LeRobot and torch, ~8 GB; once): tools/setup.sh --learning')
    done = subprocess.run([str(setup), '--learning'], check=False)
    python = learning_python()
    if done.returncode != 0 or python is None:
        raise LearningEnvError(
            f'tools/setup.sh --learning failed (exit {done.returncode}); its messages are above'
        )
    return python
