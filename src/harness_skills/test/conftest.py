import os

# CPython 3.11.7 raises SystemError ("AST constructor recursion depth mismatch",
# python/cpython#106905) when code is compiled while another thread compiles; hypothesis'
# pytest plugin imports (compiles) hypothesis at the session's end, when ROS executor threads
# of the tests may still run. Imported here, before any thread starts, it is compiled once.
import hypothesis  # noqa: F401

os.environ.setdefault('MUJOCO_GL', 'egl')
