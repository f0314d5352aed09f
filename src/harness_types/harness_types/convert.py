"""Every conversion between the harness's types and ROS messages, in one place.

Each node maps its interfaces with these; nothing here imports rclpy (message classes are
plain Python). Images are copied with `tobytes()`: assigning a numpy array to a message's
`data` copies it element by element (~3000x slower, ROS_ON_PYPI.md).
"""

from __future__ import annotations

import io

import numpy as np
from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from PIL import Image as PILImage
from sensor_msgs.msg import CameraInfo, CompressedImage, Image
from visualization_msgs.msg import Marker, MarkerArray

from harness_msgs import msg as hm
from harness_msgs.action import RunCell
from harness_types.camera import CameraView
from harness_types.cell import CellResult, ShownImage
from harness_types.execution import Execution, TraceTick
from harness_types.markers import Mark
from harness_types.robot_state import ArmState, RobotState
from harness_types.scene import ClaimAnswer, LocatedObject, SceneReport
from harness_types.transforms import matrix_to_quat, quat_to_matrix

# An action goal's statuses once it has ended (the server keeps its result for the asking).
ENDED_STATUSES = (
    GoalStatus.STATUS_SUCCEEDED,
    GoalStatus.STATUS_CANCELED,
    GoalStatus.STATUS_ABORTED,
)

# Geometry ------------------------------------------------------------------------------------


def stamp_parts(time: float) -> tuple[int, int]:
    """Seconds -> (sec, nanosec) of a builtin_interfaces/Time, nanosec in [0, 1e9) (the
    fraction rounded alone gave nanosec == 1e9 for a time just under a whole second)."""
    sec, nanosec = divmod(int(round(time * 1e9)), 1_000_000_000)
    return sec, nanosec


def stamp(time: float) -> Time:
    sec, nanosec = stamp_parts(time)
    return Time(sec=sec, nanosec=nanosec)


def point_msg(p) -> Point:
    return Point(x=float(p[0]), y=float(p[1]), z=float(p[2]))


def point_of(msg) -> np.ndarray:
    return np.array([msg.x, msg.y, msg.z])


def quat_msg(q) -> Quaternion:
    return Quaternion(w=float(q[0]), x=float(q[1]), y=float(q[2]), z=float(q[3]))


def quat_of(msg) -> np.ndarray:
    return np.array([msg.w, msg.x, msg.y, msg.z])


def pose_msg(position, quat) -> Pose:
    return Pose(position=point_msg(position), orientation=quat_msg(quat))


# Robot state ---------------------------------------------------------------------------------


def _set_pose(pose: Pose, position, quat) -> None:
    p, q = pose.position, pose.orientation
    p.x, p.y, p.z = (float(v) for v in position)
    q.w, q.x, q.y, q.z = (float(v) for v in quat)


def arm_state_msg(arm: ArmState, msg: hm.ArmState | None = None) -> hm.ArmState:
    """`arm` as a message; written into `msg` when given (its poses are assigned to, not
    rebuilt: a robot state goes out every tick while program guards are active)."""
    msg = hm.ArmState() if msg is None else msg
    msg.name = arm.name
    msg.joints = np.array(arm.joints, dtype=np.float64)
    msg.velocities = np.array(arm.velocities, dtype=np.float64)
    msg.gripper = float(arm.gripper)
    _set_pose(msg.link6, arm.link6_position, arm.link6_quat)
    _set_pose(msg.tcp, arm.tcp_position, arm.tcp_quat)
    msg.grip_force = float(arm.grip_force)
    msg.contact_force = float(arm.contact_force)
    msg.fingers = np.array(arm.fingers, dtype=np.float64)
    return msg


def arm_state_of(msg: hm.ArmState) -> ArmState:
    return ArmState(
        name=msg.name,
        joints=np.array(msg.joints),
        gripper=float(msg.gripper),
        tcp_position=point_of(msg.tcp.position),
        tcp_quat=quat_of(msg.tcp.orientation),
        link6_position=point_of(msg.link6.position),
        link6_quat=quat_of(msg.link6.orientation),
        velocities=np.array(msg.velocities),
        grip_force=float(msg.grip_force),
        contact_force=float(msg.contact_force),
        fingers=(float(msg.fingers[0]), float(msg.fingers[1])),
    )


def robot_state_msg(state: RobotState, msg: hm.RobotState | None = None) -> hm.RobotState:
    """`state` as a message; written into `msg` when given."""
    msg = hm.RobotState() if msg is None else msg
    arm_state_msg(state.left, msg.left)
    arm_state_msg(state.right, msg.right)
    msg.step = int(state.step)
    msg.sim_time = float(state.time)
    return msg


def robot_state_of(msg: hm.RobotState, images: dict | None = None) -> RobotState:
    return RobotState(
        arm_state_of(msg.left),
        arm_state_of(msg.right),
        int(msg.step),
        float(msg.sim_time),
        images or {},
    )


# Images and cameras --------------------------------------------------------------------------

_ENCODINGS = {'rgb8': (np.uint8, 3), '32FC1': (np.float32, 1), '32SC1': (np.int32, 1)}


def image_msg(array: np.ndarray, encoding: str, time: float = 0.0, frame: str = '') -> Image:
    dtype, channels = _ENCODINGS[encoding]
    array = np.ascontiguousarray(array, dtype=dtype)
    height, width = array.shape[:2]
    msg = Image(
        height=height,
        width=width,
        encoding=encoding,
        step=width * channels * np.dtype(dtype).itemsize,
    )
    msg.header.stamp = stamp(time)
    msg.header.frame_id = frame
    msg.data = array.tobytes()
    return msg


def array_of(msg: Image) -> np.ndarray | None:
    """The image as an array (None for an empty image); ValueError for another encoding."""
    if not msg.height or not msg.width:
        return None
    if msg.encoding not in _ENCODINGS:
        raise ValueError(f'image encoding {msg.encoding!r} is not one of {", ".join(_ENCODINGS)}')
    dtype, channels = _ENCODINGS[msg.encoding]
    shape = (msg.height, msg.width, channels) if channels > 1 else (msg.height, msg.width)
    return np.frombuffer(bytes(msg.data), dtype).reshape(shape).copy()


def rgb_image_msg(array: np.ndarray) -> Image:
    """An image a program showed (grey, RGB or RGBA, any number type) as rgb8."""
    array = np.asarray(array)
    if array.ndim == 2:
        array = np.repeat(array[..., None], 3, axis=2)
    if array.ndim != 3 or array.shape[2] < 3:
        raise ValueError(f'an image must be H x W, H x W x 3 or H x W x 4, got {array.shape}')
    return image_msg(np.clip(array[..., :3], 0, 255).astype(np.uint8), 'rgb8')


def compressed_image_msg(
    data: bytes, fmt: str, time: float = 0.0, frame: str = ''
) -> CompressedImage:
    """Encoded image bytes (`fmt` 'jpeg' or 'png') -> sensor_msgs/CompressedImage."""
    msg = CompressedImage(format=fmt)
    msg.header.stamp = stamp(time)
    msg.header.frame_id = frame
    msg.data = data  # bytes: copied at once
    return msg


def jpeg_of(rgb: np.ndarray, quality: int = 80) -> bytes:
    """An RGB image as JPEG (what the bag records of the cameras: ~40x smaller than raw)."""
    out = io.BytesIO()
    PILImage.fromarray(np.ascontiguousarray(rgb)).save(out, format='JPEG', quality=quality)
    return out.getvalue()


def camera_info_msg(view: CameraView) -> CameraInfo:
    h, w = view.shape
    info = CameraInfo(height=h, width=w, distortion_model='plumb_bob', d=[0.0] * 5)
    info.header.stamp = stamp(view.time)
    info.header.frame_id = view.frame_id
    info.k = [view.fx, 0.0, view.cx, 0.0, view.fy, view.cy, 0.0, 0.0, 1.0]
    info.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    info.p = [view.fx, 0.0, view.cx, 0.0, 0.0, view.fy, view.cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return info


def camera_view_msg(view: CameraView) -> hm.CameraView:
    msg = hm.CameraView(
        name=view.name,
        labels=list(view.labels),
        info=camera_info_msg(view),
        pose=pose_msg(view.position, matrix_to_quat(view.rotation)),
    )
    for attr, encoding in (('rgb', 'rgb8'), ('depth', '32FC1'), ('segmentation', '32SC1')):
        image = getattr(view, attr)
        if image is not None:
            setattr(msg, attr, image_msg(image, encoding, view.time, view.frame_id))
    return msg


def camera_view_of(msg: hm.CameraView) -> CameraView:
    k = msg.info.k
    return CameraView(
        name=msg.name,
        rgb=array_of(msg.rgb),
        fx=float(k[0]),
        fy=float(k[4]),
        cx=float(k[2]),
        cy=float(k[5]),
        position=point_of(msg.pose.position),
        rotation=quat_to_matrix(quat_of(msg.pose.orientation)),
        depth=array_of(msg.depth),
        segmentation=array_of(msg.segmentation),
        labels=tuple(msg.labels),
        time=msg.info.header.stamp.sec + msg.info.header.stamp.nanosec * 1e-9,
    )


# Executions ----------------------------------------------------------------------------------


def ros_text(text: str) -> str:
    """`text` for a ROS string field, which ends at a NUL: each NUL written as \\x00 (what a
    program printed after one, and the kernel's notes after that, were lost)."""
    return text.replace('\x00', '\\x00')


def event_msg(e: Execution) -> hm.Event:
    return hm.Event(
        name=e.event,
        detail=ros_text(e.detail),  # (a guard's or handler's words may be the program's)
        reasons=[ros_text(r) for r in e.reasons],
        skill=e.skill,
        time=float(e.time),
    )


def trace_msg(e: Execution) -> hm.ExecutionTrace:
    trace = hm.ExecutionTrace(
        skill=e.skill,
        arm=e.arm,
        start_step=int(e.start_step),
        end_step=int(e.end_step),
        event=event_msg(e),
        holding=bool(e.holding),
        opening=float(e.opening or 0.0),
        reports_grip=e.holding is not None,
        chunks=int(e.chunks or 0),
        actions=int(e.actions or 0),
    )
    trace.ticks = [
        hm.TraceTick(
            time=float(t.time),
            measured=[float(v) for v in t.measured],
            command=[float(v) for v in t.command],
            guards=[ros_text(g) for g in t.guards],  # (names a program gave)
        )
        for t in e.trace
    ]
    return trace


def execution_of(trace: hm.ExecutionTrace) -> Execution:
    e = trace.event
    return Execution(
        skill=trace.skill or e.skill,
        arm=trace.arm,
        event=e.name,
        detail=e.detail,
        reasons=tuple(e.reasons),
        trace=[
            TraceTick(t.time, np.array(t.measured), np.array(t.command), tuple(t.guards))
            for t in trace.ticks
        ],
        start_step=int(trace.start_step),
        end_step=int(trace.end_step),
        time=float(e.time),
        holding=bool(trace.holding) if trace.reports_grip else None,
        opening=float(trace.opening) if trace.reports_grip else None,
        chunks=int(trace.chunks) if trace.skill == 'run_policy' else None,
        actions=int(trace.actions) if trace.skill == 'run_policy' else None,
    )


# Scene, verdicts, cells ----------------------------------------------------------------------


def located_object_msg(o: LocatedObject) -> hm.LocatedObject:
    return hm.LocatedObject(
        id=o.id,
        label=o.label,
        position=point_msg(o.position),
        size=Vector3(x=float(o.size[0]), y=float(o.size[1]), z=float(o.size[2])),
        top=float(o.top),
        cameras=list(o.cameras),
    )


def located_object_of(msg: hm.LocatedObject) -> LocatedObject:
    return LocatedObject(
        msg.id,
        msg.label,
        point_of(msg.position),
        np.array([msg.size.x, msg.size.y, msg.size.z]),
        float(msg.top),
        list(msg.cameras),
    )


def scene_report_msg(scene: SceneReport) -> hm.SceneReport:
    return hm.SceneReport(
        objects=[located_object_msg(o) for o in scene.objects],
        left_holds=scene.held.get('left') or '',
        right_holds=scene.held.get('right') or '',
        measured=scene.measured,
    )


def scene_report_of(msg: hm.SceneReport) -> SceneReport:
    return SceneReport(
        [located_object_of(o) for o in msg.objects],
        {'left': msg.left_holds or None, 'right': msg.right_holds or None},
        bool(msg.measured),
    )


def verdict_into(response, verdict: ClaimAnswer):
    response.answered, response.yes, response.sentence = (
        verdict.answered,
        verdict.yes,
        verdict.sentence,
    )
    return response


def claim_answer_of(response) -> ClaimAnswer:
    return ClaimAnswer(bool(response.answered), bool(response.yes), response.sentence)


def cell_result_msg(cell: CellResult) -> RunCell.Result:
    msg = RunCell.Result(
        status=cell.status,
        output=ros_text(cell.output),
        notes=[ros_text(n) for n in cell.notes],
        traceback=ros_text(cell.traceback),
        summary=ros_text(cell.summary),
        restored=list(cell.restored),
        events_handled=int(cell.events_handled),
        report=scene_report_msg(cell.scene),
        strategy=cell.strategy,
        strategy_kind=cell.strategy_kind,
    )
    if cell.stopped_by is not None:
        msg.stopped_by = [trace_msg(cell.stopped_by)]
    msg.executions = [trace_msg(e) for e in cell.executions]
    msg.images = [rgb_image_msg(i.rgb) for i in cell.images]
    msg.image_captions = [ros_text(i.caption) for i in cell.images]
    return msg


def cell_result_of(msg: RunCell.Result) -> CellResult:
    return CellResult(
        status=msg.status,
        output=msg.output,
        notes=list(msg.notes),
        traceback=msg.traceback,
        summary=msg.summary,
        stopped_by=execution_of(msg.stopped_by[0]) if msg.stopped_by else None,
        executions=[execution_of(t) for t in msg.executions],
        images=[
            ShownImage(c, array_of(i)) for c, i in zip(msg.image_captions, msg.images, strict=False)
        ],
        restored=list(msg.restored),
        events_handled=int(msg.events_handled),
        scene=scene_report_of(msg.report),
        strategy=msg.strategy,
        strategy_kind=msg.strategy_kind,
    )


# Markers -------------------------------------------------------------------------------------

_BOX_EDGES = [
    (a, b)
    for a in range(8)
    for b in range(a + 1, 8)
    if bin(a ^ b).count('1') == 1  # corners differing in one coordinate share an edge
]


def marker_array_msg(marks: list[Mark], time: float = 0.0) -> MarkerArray:
    """Marks -> visualization_msgs/MarkerArray (a wire box is a LINE_LIST of its 12 edges)."""
    out = MarkerArray()
    for m in marks:
        msg = Marker()
        msg.header.frame_id = m.frame
        msg.header.stamp = stamp(time)
        msg.ns = m.namespace
        msg.id = int(m.id)
        if m.clear_namespace:
            msg.action = Marker.DELETEALL
            out.markers.append(msg)
            continue
        if m.delete:
            msg.action = Marker.DELETE
            out.markers.append(msg)
            continue
        msg.action = Marker.ADD
        msg.pose.orientation.w = 1.0
        msg.pose.position = point_msg(m.position)
        msg.scale = Vector3(x=float(m.size[0]), y=float(m.size[1]), z=float(m.size[2]))
        msg.color.r, msg.color.g, msg.color.b, msg.color.a = (float(c) for c in m.rgba)
        msg.lifetime.sec = int(m.lifetime_s)
        msg.lifetime.nanosec = int(round((m.lifetime_s - int(m.lifetime_s)) * 1e9))
        if m.shape == 'box':
            msg.type = Marker.CUBE
        elif m.shape == 'sphere':
            msg.type = Marker.SPHERE
        elif m.shape == 'text':
            msg.type = Marker.TEXT_VIEW_FACING
            msg.text = m.text
        elif m.shape == 'wire_box':
            msg.type = Marker.LINE_LIST
            half = np.asarray(m.size) / 2
            corners = [half * np.array([(c >> i & 1) * 2 - 1 for i in range(3)]) for c in range(8)]
            msg.points = [point_msg(corners[i]) for edge in _BOX_EDGES for i in edge]
            msg.scale = Vector3(x=0.004, y=0.0, z=0.0)  # line width
        else:
            raise ValueError(f'no marker shape {m.shape!r}')
        out.markers.append(msg)
    return out
