import os

# The pixels tests render the station with MuJoCo, off screen.
os.environ.setdefault('MUJOCO_GL', 'egl')
