"""RosReactivePort reuses one request per thread: each tick's request carries that tick's state
and only the views due at that tick."""

import numpy as np
from harness_skills.ros_port import RosReactivePort
from harness_types.robot_state import ArmState, RobotState

from harness_msgs.msg import CameraView
from harness_msgs.srv import ReactiveStep


class RecordingLane:
    srv_name = '/kernel/reactive_step'

    def __init__(self) -> None:
        self.sent: list[tuple[int, list[str]]] = []

    def call(self, request, timeout):
        self.sent.append((request.state.step, [v.name for v in request.views]))
        return ReactiveStep.Response()


class OneViewStation:
    def call(self, service, request):
        assert service == 'observe' and list(request.cameras) == ['cam_head']
        return type('Observed', (), {'views': [CameraView(name='cam_head')]})()


def state(step: int) -> RobotState:
    def arm(name):
        return ArmState(name, np.zeros(6), 1.0, np.zeros(3), np.array([1.0, 0, 0, 0]), np.zeros(3))

    return RobotState(arm('left'), arm('right'), step, step * 0.04)


def test_a_reused_request_sends_views_only_on_the_ticks_they_are_due():
    lane = RecordingLane()
    port = RosReactivePort(lane, OneViewStation(), timeout=1.0)
    port.use_cameras(['cam_head'], every=2)
    for step, controller in ((1, True), (2, False), (3, True), (4, True), (5, True)):
        assert not port.step('e1', 'move_eef', state(step), controller).fault
    # Controller calls 1, 3, 4, 5: views with the 1st and 3rd of them (every=2).
    assert lane.sent == [
        (1, ['cam_head']),
        (2, []),
        (3, []),
        (4, ['cam_head']),
        (5, []),
    ]
