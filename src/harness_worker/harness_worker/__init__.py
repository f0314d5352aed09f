"""The worker node and its backends (MuJoCo station); kinematics for fk/ik/plan."""

import arx_x5_description  # noqa: F401  (sets MUJOCO_GL before mujoco is imported)
