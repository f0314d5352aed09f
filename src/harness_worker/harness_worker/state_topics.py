"""/clock, /joint_states and /tf of each tick, published in tick order on a thread of their own.

rclpy publishes while holding Python's lock, and a message with a subscriber (the recorder, an
rviz) costs ~50 us in the middleware; with the bag's recorder listening the three topics cost a
tick ~0.35 ms on its own thread. Published here instead, they go out while the next tick's
physics runs without the lock: a recorded lift_cube tick's own CPU 1.23 -> 0.88 ms (medians of
452 ticks, interleaved episodes; 0.83 ms without the recorder). The states wait in a bounded
queue: when STATE_BACKLOG of them wait, a tick waits for the topics rather than let them fall
further behind.
"""

from __future__ import annotations

import queue
import threading
import traceback

from arx_x5_description.embodiment import ARMS
from harness_types.robot_state import RobotState
from harness_types.tf_tree import TfTree
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

from harness_types import names
from harness_worker.state_messages import StateMessages

STATE_BACKLOG = 50  # ticks whose topics may wait to be published (2 s of the robot's time)


class StateTopics:
    """The worker's state topics for a station it simulates: `put` a tick's state; `flush`
    waits until every state put before is published; `close` stops the thread."""

    def __init__(self, node: Node, joint_names: list[str], tf_tree: TfTree) -> None:
        self._joint_names = list(joint_names)
        self._messages = StateMessages(self._joint_names, tf_tree)
        self.joint_states = node.create_publisher(JointState, names.JOINT_STATES, 10)
        self.tf = node.create_publisher(TFMessage, names.TF, 10)
        self.clock = node.create_publisher(Clock, names.CLOCK, 10)
        self._logger = node.get_logger()
        self._states: queue.Queue[RobotState | None] = queue.Queue(STATE_BACKLOG)
        self._thread = threading.Thread(target=self._run, name='state_topics', daemon=True)
        self._thread.start()

    def put(self, state: RobotState) -> None:
        if not self._thread.is_alive():
            raise RuntimeError('the state topics are closed')
        self._states.put(state)

    def flush(self) -> None:
        """Wait until the states put so far are published (or failed to be, which is logged)."""
        self._states.join()

    def close(self) -> None:
        """Publish what waits, then stop the thread (before the node's publishers go)."""
        if self._thread.is_alive():
            self._states.put(None)
            self._thread.join()

    def _run(self) -> None:
        while True:
            state = self._states.get()
            try:
                if state is None:
                    return
                self._publish(state)
            except Exception:  # a lost message must not stop the topics; it is said
                self._logger.error(f'state topics not published:\n{traceback.format_exc()}')
            finally:
                self._states.task_done()

    def _publish(self, state: RobotState) -> None:
        self.clock.publish(self._messages.clock(state.time))
        # /joint_states and /tf are written into bytes serialized once (state_messages.py), and
        # only when someone listens.
        joint_states, tf = (p.get_subscription_count() > 0 for p in (self.joint_states, self.tf))
        positions = self._positions(state) if joint_states or tf else {}
        if joint_states:
            values = list(positions.values())
            self.joint_states.publish(self._messages.joint_states(values, state.time))
        if tf:
            self.tf.publish(self._messages.tf(positions, state.time))

    def _positions(self, state: RobotState) -> dict[str, float]:
        """The 16 joint positions by URDF name (both fingers of each gripper)."""
        values: list[float] = []
        for arm in ARMS:
            a = state.arm(arm)
            values += [float(q) for q in a.joints] + [float(f) for f in a.fingers]
        return dict(zip(self._joint_names, values, strict=True))
