"""The worker node and its backends (MuJoCo station); kinematics for fk/ik/plan."""
