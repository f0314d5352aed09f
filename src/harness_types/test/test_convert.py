"""Every type survives its trip through the messages unchanged."""

import numpy as np
from harness_types.camera import CameraView
from harness_types.cell import CellResult, ShownImage
from harness_types.convert import (
    camera_view_msg,
    camera_view_of,
    cell_result_msg,
    cell_result_of,
    robot_state_msg,
    robot_state_of,
    stamp,
)
from harness_types.execution import Execution, TraceTick
from harness_types.robot_state import ArmState, RobotState, signal_names
from harness_types.scene import LocatedObject, SceneReport
from harness_types.transforms import quat_to_matrix


def arm(name, z):
    return ArmState(
        name,
        np.arange(6) * 0.1,
        0.7,
        np.array([0.1, 0.2, z]),
        np.array([0.5, 0.5, 0.5, 0.5]),
        np.array([0.1, 0.2, z + 0.1]),
        np.array([1.0, 0.0, 0.0, 0.0]),
        np.ones(6) * 0.01,
        3.5,
        (0.02, 0.021),
    )


def assert_same_state(a: RobotState, b: RobotState) -> None:
    for x, y in ((a.left, b.left), (a.right, b.right)):
        assert x.name == y.name
        for field in ('joints', 'tcp_position', 'tcp_quat', 'link6_position', 'link6_quat'):
            assert np.array_equal(getattr(x, field), getattr(y, field)), field
        assert np.array_equal(x.velocities, y.velocities)
        assert (x.gripper, x.grip_force, x.fingers) == (y.gripper, y.grip_force, y.fingers)
    assert (a.step, a.time) == (b.step, b.time)


def test_robot_state_round_trip():
    state = RobotState(arm('left', 0.9), arm('right', 1.0), 42, 1.68)
    back = robot_state_of(robot_state_msg(state))
    assert_same_state(back, state)
    assert (back.step, back.time) == (42, 1.68)
    assert np.array_equal(back.measured, state.measured) and back.measured.shape == (14,)
    assert sorted(state.signals()) == sorted(signal_names())
    assert state.signals()['right_contact'] == 1.0 and back.left.tcp is back.left.tcp_position


def scribbled(msg):
    """`msg` with every field set to a value no conversion writes (a message used before)."""
    for name, kind in msg.get_fields_and_field_types().items():
        value = getattr(msg, name)
        if hasattr(value, 'get_fields_and_field_types'):
            scribbled(value)
        elif kind == 'string':
            setattr(msg, name, 'scribbled')
        elif kind.startswith(('double', 'float')):
            setattr(msg, name, np.full_like(value, -77.0) if kind.endswith(']') else -77.0)
        elif kind.startswith(('uint', 'int')):
            setattr(msg, name, 77)
    return msg


def test_robot_state_written_into_a_used_message_is_the_fresh_message():
    state = RobotState(arm('left', 0.9), arm('right', 1.0), 42, 1.68)
    used = scribbled(robot_state_msg(state))
    assert robot_state_of(used).left.grip_force == -77.0 and used.step == 77
    assert robot_state_msg(state, used) is used
    assert_same_state(robot_state_of(used), state)
    assert used == robot_state_msg(state)


def test_camera_view_round_trip():
    rng = np.random.default_rng(1)
    view = CameraView(
        'cam_head',
        rng.integers(0, 255, (6, 8, 3), dtype=np.uint8),
        100.0,
        101.0,
        4.0,
        3.0,
        np.array([0.0, -0.41, 1.3]),
        quat_to_matrix([0.3, 0.1, -0.2, 0.9]),
        rng.random((6, 8)).astype(np.float32),
        rng.integers(-1, 2, (6, 8)).astype(np.int32),
        ('red cube', 'bowl'),
        2.5,
    )
    back = camera_view_of(camera_view_msg(view))
    assert np.array_equal(back.rgb, view.rgb) and np.array_equal(back.depth, view.depth)
    assert np.array_equal(back.segmentation, view.segmentation)
    assert np.allclose(back.rotation, view.rotation, atol=1e-12)
    assert (back.fx, back.fy, back.cx, back.cy, back.labels) == (100, 101, 4, 3, view.labels)
    assert back.time == 2.5 and back.frame_id == 'cam_head_optical'
    rgb_only = camera_view_of(
        camera_view_msg(CameraView('c', view.rgb, 1, 1, 0, 0, view.position, np.eye(3)))
    )
    assert rgb_only.depth is None and rgb_only.segmentation is None


def test_cell_result_round_trip():
    tick = TraceTick(0.04, np.zeros(14), np.ones(14), ('g',))
    e = Execution(
        'move_eef', 'left', 'BLOCKED', 'stopped short', ('stopped short',), [tick], 3, 4, 0.16
    )
    grip = Execution('close_gripper', 'right', 'COMPLETED', 'closed', holding=True, opening=0.3)
    cell = CellResult(
        'escalated',
        'out',
        '',
        '',
        e,
        [grip, e],
        [ShownImage('look', np.zeros((2, 3, 3), np.uint8))],
        ['pick'],
        2,
        SceneReport(
            [
                LocatedObject(
                    'cube',
                    'red cube',
                    np.array([0.1, 0.2, 0.8]),
                    np.ones(3) * 0.04,
                    0.82,
                    ['cam_head'],
                )
            ],
            {'left': 'cube', 'right': None},
            True,
        ),
        notes=['the program process was started again'],
    )
    back = cell_result_of(cell_result_msg(cell))
    assert back.notes == ['the program process was started again']
    assert back.status == 'escalated' and back.stopped_by.event == 'BLOCKED'
    assert back.stopped_by.trace[0].guards == ('g',) and back.stopped_by.end_step == 4
    assert back.executions[0].holding is True and back.executions[0].opening == 0.3
    assert back.executions[1].holding is None
    assert back.images[0].caption == 'look' and back.images[0].rgb.shape == (2, 3, 3)
    assert back.scene.held == {'left': 'cube', 'right': None} and back.scene.measured
    assert back.scene.objects[0].id == 'cube' and back.events_handled == 2


def test_stamp():
    t = stamp(12.25)
    assert (t.sec, t.nanosec) == (12, 250_000_000)


def test_markers_to_messages():
    from harness_types.convert import marker_array_msg
    from harness_types.markers import located_marks, region_mark, rejection_marks
    from harness_types.scene import LocatedObject
    from visualization_msgs.msg import Marker

    cube = LocatedObject('red_cube_1', 'red cube', np.array([0.1, 0.2, 0.8]), np.full(3, 0.04), 0.8)
    located = marker_array_msg(located_marks([cube])).markers
    # What locate() saw before is cleared first; then the box and the id above its top.
    assert [m.action for m in located] == [Marker.DELETEALL, Marker.ADD, Marker.ADD]
    box, label = located[1], located[2]
    assert box.type == Marker.CUBE and np.isclose(box.scale.x, 0.04) and box.ns == 'located'
    assert label.text == 'red_cube_1' and label.pose.position.z > 0.8
    assert box.header.frame_id == 'world'

    region = marker_array_msg([region_mark(3, [0, -0.1, 0.8], [0.2, 0.1, 1.0])]).markers[0]
    assert region.type == Marker.LINE_LIST and len(region.points) == 24  # 12 edges
    corners = {(p.x, p.y, p.z) for p in region.points}
    assert len(corners) == 8 and all(np.isclose(abs(c), 0.1) for p in corners for c in p)
    assert np.isclose(region.pose.position.z, 0.9)
    gone = marker_array_msg([region_mark(3, [0, 0, 0], [1, 1, 1], active=False)]).markers[0]
    assert gone.action == Marker.DELETE and gone.id == 3 and gone.ns == 'regions'

    sphere, text = marker_array_msg(rejection_marks(2, 'right', [0.3, -0.2, 1.0], 'x')).markers
    assert sphere.lifetime.sec == 5 and text.text == 'right: x' and sphere.id != text.id


def test_every_stamp_is_normalised():
    """~8 stamps a topic in every bag had nanosec == 1000000000: the fraction was rounded
    alone. Times just under and over whole seconds, and the bags' usual tick times."""
    from harness_types.convert import stamp_parts

    times = [k + d for k in range(0, 200) for d in (-5e-10, -1e-10, 0.0, 1e-10, 0.9999999996)]
    times += [n * 0.04 for n in range(5000)]
    for t in times:
        sec, nanosec = stamp_parts(t)
        assert 0 <= nanosec < 1_000_000_000, (t, sec, nanosec)
        assert abs(sec + nanosec * 1e-9 - t) < 1e-6


def test_a_programs_nul_does_not_end_what_it_sends():
    """A ROS string ends at a NUL: what a program printed after one, the kernel's clip note
    and the rest of a traceback were lost. Each NUL is written as \\x00 instead."""
    from harness_types.convert import execution_of, trace_msg

    sent = CellResult('error', output='first\x00hidden', traceback='ValueError: tail\x00 after')
    back = cell_result_of(cell_result_msg(sent))
    assert back.output == 'first\\x00hidden' and back.traceback.endswith('tail\\x00 after')
    # ... and a guard's name, which the program gives (when(name=...))
    tick = TraceTick(0.04, [0.0] * 14, [0.0] * 14, ('mine\x00 and more',))
    moved = Execution('move_eef', 'left', 'COMPLETED', 'done', trace=[tick])
    assert execution_of(trace_msg(moved)).trace[0].guards == ('mine\\x00 and more',)
