"""The ARX X5 dual-arm station: embodiment numbers, URDF and the MuJoCo model built from it."""

import os

# MuJoCo picks its GL backend when first imported; this package is the first to import it, and
# the station renders offscreen (no display). A caller may still choose another backend.
os.environ.setdefault('MUJOCO_GL', 'egl')
