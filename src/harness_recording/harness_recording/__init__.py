"""What an episode leaves behind and how it is read: the run folder, ticks, the ROS bag and its
replay, the run's HTML report, the bench tables and report cards, and LeRobot v3 datasets of
trials."""
