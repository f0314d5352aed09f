"""Scenes staged by hand and scripted motions in the embedded simulator, for tests and
measurements (the perf scripts) that need a state no reset gives. Never part of an episode:
no runtime package imports this one."""
