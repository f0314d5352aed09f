"""The harness's one vocabulary, at the bottom of the package graph.

- `robot_state`: ArmState, RobotState (what every layer reads about the arms)
- `camera`: CameraView (images with intrinsics and the optical frame's pose)
- `execution`: Event names, TraceTick, Execution (one bounded execution and its event)
- `scene`: LocatedObject, SceneReport, ClaimAnswer
- `cell`: CellResult (a program cell and the turn report measured after it)
- `transforms`: quaternions, rotations, the tool orientations
- `convert`: every conversion between these types and harness_msgs / ROS messages
- `names`: the ROS names of the graph
- `config`: the typed node-graph configuration (config/harness.yaml)
- `wait`: waiting on a future that another thread's executor completes
- `lanes`: a service with a node and a thread of its own at each end, waited on directly (the
  worker's tick and reads, reactive_step, the skill server's reads)
- `folder_walk`: a folder tree walked by descriptor (no path too long, no link followed)

Nothing here imports rclpy but `lanes`.
"""
