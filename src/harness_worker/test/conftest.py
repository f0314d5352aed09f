import os

# Before any test module imports mujoco: the station renders offscreen (no display here).
os.environ.setdefault('MUJOCO_GL', 'egl')
