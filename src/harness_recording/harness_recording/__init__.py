"""What an episode leaves behind and what learning reads back: the run folder, ticks, the ROS
bag and its replay, and LeRobot v3 datasets of trials."""
