"""The worker node and its backends (MuJoCo station); kinematics for fk/ik/plan."""

import os

# MuJoCo picks its GL backend when first imported: the embedded worker renders offscreen.
os.environ.setdefault('MUJOCO_GL', 'egl')
