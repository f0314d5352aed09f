"""On a ROS 2 installation (launch_testing, ros2_control and mock_components installed): the
mock-hardware launch file starts ros2_control with its controllers and the harness's station;
a kernel runs one program cell that moves the left arm; the move reaches the hardware (the
joint state joint_state_broadcaster publishes) through the shield, the worker and the stock
position controller. Skipped where launch_testing is not installed (the PyPI path).

    colcon test --packages-select harness_bringup   # runs it with the other tests
    launch_test src/harness_bringup/test/test_mock_hardware_launch.py
"""

import os
import tempfile
import threading
import time
import unittest
from pathlib import Path

import pytest

pytest.importorskip('launch_testing', reason='launch_testing is not installed')
pytest.importorskip('launch_ros', reason='launch_ros is not installed')

import launch
import launch_testing.actions
import rclpy
from harness_bringup.station_graph import spun_action_client
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from rclpy.executors import MultiThreadedExecutor
from sensor_msgs.msg import JointState

from harness_msgs.action import RunCell
from harness_msgs.srv import Reset
from harness_types import names

LAUNCH = Path(__file__).resolve().parents[1] / 'launch' / 'mock_hardware.launch.py'
STARTUP_S = 120.0  # ros2_control_node, two spawners and the harness nodes


@pytest.mark.launch_test
def generate_test_description():
    return launch.LaunchDescription(
        [
            IncludeLaunchDescription(PythonLaunchDescriptionSource(str(LAUNCH))),
            launch_testing.actions.ReadyToTest(),
        ]
    )


class TestOneCellOnMockHardware(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rclpy.init()
        cls.node = rclpy.create_node('mock_hardware_test')
        cls.executor = MultiThreadedExecutor(num_threads=2)
        cls.executor.add_node(cls.node)
        threading.Thread(target=cls.executor.spin, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.executor.shutdown()
        cls.node.destroy_node()
        rclpy.shutdown()

    def wait(self, future, timeout):
        deadline = time.monotonic() + timeout
        while not future.done():
            self.assertLess(time.monotonic(), deadline, 'no answer in time')
            time.sleep(0.01)
        return future.result()

    def test_a_cell_moves_the_mock_arm_through_the_shield(self):
        from harness_bringup.kernel_process import KernelProcess

        states = []
        self.node.create_subscription(JointState, names.JOINT_STATES, states.append, 10)
        reset = self.node.create_client(Reset, names.worker_service('reset'))
        self.assertTrue(reset.wait_for_service(timeout_sec=STARTUP_S), 'no worker')
        answer = self.wait(reset.call_async(Reset.Request(task='lift_cube')), STARTUP_S)
        self.assertTrue(answer.success, answer.message)

        client = spun_action_client(self.executor, 'mock_run_cell', RunCell, names.RUN_CELL)
        root = Path(tempfile.mkdtemp(prefix='mock-hardware-'))
        domain = int(os.environ.get('ROS_DOMAIN_ID', '0') or 0)
        kernel = KernelProcess(client, domain, root / 'workspace', root / 'kernel.log')
        kernel.start(timeout=60)
        try:
            goal = self.wait(
                client.send_goal_async(
                    RunCell.Goal(code='r = move_joints([0.3, 0.3, 0.3, 0, 0, 0], arm="left")')
                ),
                30,
            )
            result = self.wait(goal.get_result_async(), 120).result
            self.assertEqual(result.status, 'ok', result.traceback)
        finally:
            kernel.stop()
        position = dict(zip(states[-1].name, states[-1].position, strict=False))
        self.assertAlmostEqual(position['left_joint1'], 0.3, delta=0.01)
