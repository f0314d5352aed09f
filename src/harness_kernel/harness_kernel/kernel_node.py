"""The kernel node: one process per episode, running program cells on its main thread.

The executor spins in a second thread. `run_cell` goals and `reactive_step` requests arrive
there and are handed to the main thread through a queue; while a cell waits on a skill, the
main thread keeps answering reactive_step (the program's guards, until and controller).

    kernel [--workspace DIR] [--log FILE] [--no-isolation] [--ros-args ...]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import rclpy
from arx_x5_description.embodiment import load_embodiment
from geometry_msgs.msg import Point, Quaternion, Vector3
from harness_reactive.stage import ProgramStage, ReactiveResult
from harness_skills.perception import View, rotation_from_quat
from harness_skills.reactive_server import serve_reactive_step
from rclpy.action import ActionClient, ActionServer
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.utilities import get_default_context
from sensor_msgs.msg import Image

from harness_kernel.api import ProgramApi
from harness_kernel.cell import CellResult, CellRunner
from harness_kernel.records import ArmView, Execution, SceneMeasure, StateView, Verdict
from harness_msgs.action import Gripper, Home, MoveEef, MoveJoints, RunCell, RunController
from harness_msgs.msg import Event, LocatedObject, SceneReport
from harness_msgs.srv import Ik, Observe, State, Verify

DISCOVERY_S = 15.0  # how long a first call waits for its server to appear

SKILL_TYPES = {
    'move_joints': MoveJoints,
    'move_eef': MoveEef,
    'open_gripper': Gripper,
    'close_gripper': Gripper,
    'home': Home,
    'run_controller': RunController,
}


def view_of(v) -> View:
    """A CameraView message as perception's View."""
    h, w = v.depth.height, v.depth.width
    depth = np.frombuffer(bytes(v.depth.data), np.float32).reshape(h, w)
    seg = np.frombuffer(bytes(v.segmentation.data), np.int32).reshape(h, w)
    q = v.pose.orientation
    rot = rotation_from_quat(q.w, q.x, q.y, q.z)
    k = v.info.k
    p = v.pose.position
    return View(
        v.name, depth, seg, list(v.labels), k[0], k[4], k[2], k[5], np.array([p.x, p.y, p.z]), rot
    )


class ReactiveTimeout(BaseException):
    def __str__(self) -> str:
        return 'stopped: it did not return (an endless loop?)'


@dataclass
class Job:
    fn: Callable[[], Any]
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None


class MainThread:
    """The queue through which the executor hands program work to the main thread."""

    def __init__(self) -> None:
        self.cells: queue.Queue[Job] = queue.Queue()
        self.reactive: queue.Queue[Job] = queue.Queue()

    def submit(self, q: queue.Queue, fn: Callable[[], Any], timeout: float | None = None) -> Any:
        job = Job(fn)
        q.put(job)
        if not job.done.wait(timeout):
            raise TimeoutError('the kernel main thread did not take the job')
        return job.result

    def pump_reactive(self) -> None:
        while True:
            try:
                job = self.reactive.get_nowait()
            except queue.Empty:
                return
            job.result = job.fn()
            job.done.set()


def run_reactive_with_deadline(fn: Callable[[], ReactiveResult], seconds: float) -> ReactiveResult:
    """Run reactive code on the main thread, interrupting it after `seconds` (SIGALRM), and give
    the cell's own timer back its remaining time."""
    remaining, _ = signal.getitimer(signal.ITIMER_REAL)
    previous = signal.signal(signal.SIGALRM, _raise_reactive_timeout)
    start = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn()
    except ReactiveTimeout as exc:
        return ReactiveResult(fault=f'reactive code {exc} after {seconds * 1e3:.0f} ms')
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if remaining > 0:
            signal.setitimer(signal.ITIMER_REAL, max(1e-3, remaining - (time.monotonic() - start)))


def _raise_reactive_timeout(_signum, _frame) -> None:
    raise ReactiveTimeout()


def image_msg(array: np.ndarray) -> Image:
    array = np.ascontiguousarray(array)
    if array.ndim == 2:
        array = np.repeat(array[..., None], 3, axis=2)
    array = array[..., :3].astype(np.uint8)
    return Image(
        height=array.shape[0],
        width=array.shape[1],
        encoding='rgb8',
        step=3 * array.shape[1],
        data=array.tobytes(),
    )


class RosRobot:
    """The API's robot port over the skill servers and the worker."""

    def __init__(self, node: Node, main: MainThread, wait_s: float = 600.0) -> None:
        self.node = node
        self.main = main
        group = ReentrantCallbackGroup()
        self.actions = {
            name: ActionClient(node, kind, f'/skills/{name}', callback_group=group)
            for name, kind in SKILL_TYPES.items()
        }
        self.state_client = node.create_client(State, '/worker/state', callback_group=group)
        self.observe_client = node.create_client(Observe, '/worker/observe', callback_group=group)
        self.ik_client = node.create_client(Ik, '/worker/ik', callback_group=group)
        self.verify_client = node.create_client(Verify, '/driver/verify', callback_group=group)
        self.traces: list = []
        self.counter = 0
        self.wait_s = wait_s

    def _call(self, client, request) -> Any:
        # A request sent before the server is discovered is lost: wait for it first.
        if not client.wait_for_service(timeout_sec=DISCOVERY_S):
            raise RuntimeError(f'{client.srv_name} is not available')
        return self._wait(client.call_async(request))

    def _wait(self, future) -> Any:
        deadline = time.monotonic() + self.wait_s
        while not future.done():
            self.main.pump_reactive()
            if time.monotonic() > deadline:
                raise TimeoutError('no answer from the skill server')
            time.sleep(0.0005)
        return future.result()

    def execute(self, skill: str, goal: dict, reactive: bool) -> Execution:
        client = self.actions[skill]
        if not client.wait_for_server(timeout_sec=DISCOVERY_S):
            raise RuntimeError(f'the skill server does not offer /skills/{skill}')
        msg = self._goal(skill, goal, reactive)
        handle = self._wait(client.send_goal_async(msg))
        if not handle.accepted:
            raise RuntimeError(f'/skills/{skill} refused the goal')
        try:
            result = self._wait(handle.get_result_async()).result
        except BaseException:
            handle.cancel_goal_async()  # the cell stopped (timeout): stop the arm too
            raise
        self.traces.append(result.trace)
        e = result.event
        trace = [
            {
                'time': t.time,
                'measured': list(t.measured),
                'command': list(t.command),
                'guards': list(t.guards),
            }
            for t in result.trace.ticks
        ]
        holding = bool(result.holding) if skill == 'close_gripper' else None
        return Execution(
            skill,
            result.trace.arm or goal.get('arm', ''),
            e.name,
            e.detail,
            list(e.reasons),
            trace,
            holding,
        )

    def _goal(self, skill: str, g: dict, reactive: bool):
        msg = SKILL_TYPES[skill].Goal()
        if skill == 'move_joints':
            msg.arm, msg.positions, msg.speed = g['arm'], g['positions'], g['speed']
        elif skill == 'move_eef':
            msg.arm, msg.speed = g['arm'], g['speed']
            msg.cartesian = bool(g.get('cartesian', False))
            x, y, z = g['position']
            msg.position = Point(x=x, y=y, z=z)
            if g.get('quat') is not None:
                w, qx, qy, qz = g['quat']
                msg.orientation, msg.use_orientation = Quaternion(w=w, x=qx, y=qy, z=qz), True
        elif skill in ('open_gripper', 'close_gripper'):
            msg.arm, msg.target = g['arm'], g['target']
        elif skill == 'home':
            msg.arm = g['arm']
        elif skill == 'run_controller':
            msg.hz, msg.cameras, msg.camera_hz = g['hz'], g['cameras'], g['camera_hz']
            reactive = True
        options = msg.options
        options.max_seconds = float(g.get('max_seconds', 0.0))
        if g.get('region') is not None:
            lo, hi = g['region']
            options.use_region, options.region_min, options.region_max = True, list(lo), list(hi)
        options.reactive = reactive
        self.counter += 1
        options.execution_id = f'{skill}-{self.counter}'
        return msg

    def state(self) -> StateView:
        s = self._call(self.state_client, State.Request()).state

        def arm(a):
            return ArmView(
                list(a.joints),
                a.gripper,
                [a.tcp.position.x, a.tcp.position.y, a.tcp.position.z],
                [
                    a.tcp.orientation.w,
                    a.tcp.orientation.x,
                    a.tcp.orientation.y,
                    a.tcp.orientation.z,
                ],
                a.grip_force,
            )

        return StateView(arm(s.left), arm(s.right), int(s.step), float(s.sim_time))

    def views(self) -> list[View]:
        r = self._call(self.observe_client, Observe.Request(depth=True, segmentation=True))
        if not r.success:
            raise ValueError(r.message)
        return [view_of(v) for v in r.views]

    def reachable(self, arm: str, position, quat) -> bool:
        req = Ik.Request(
            arm=arm,
            position=Point(x=float(position[0]), y=float(position[1]), z=float(position[2])),
            use_orientation=True,
            orientation=Quaternion(w=quat[0], x=quat[1], y=quat[2], z=quat[3]),
        )
        return bool(self._call(self.ik_client, req).success)

    def verify(self, claim: str) -> Verdict:
        if not self.verify_client.wait_for_service(timeout_sec=1.0):
            return Verdict(
                False, 'no verifier in this run (no driver serves /driver/verify)', False
            )
        r = self._wait(self.verify_client.call_async(Verify.Request(claim=claim)))
        return Verdict(bool(r.yes), r.sentence, bool(r.answered))

    def image(self, camera: str) -> np.ndarray:
        r = self._call(self.observe_client, Observe.Request(cameras=[camera]))
        if not r.success:
            raise ValueError(r.message)
        v = r.views[0].rgb
        return np.frombuffer(bytes(v.data), np.uint8).reshape(v.height, v.width, 3).copy()


class KernelNode(Node):
    def __init__(self, main: MainThread, log: Callable[[dict], None], **kwargs) -> None:
        super().__init__('kernel', **kwargs)
        self.declare_parameter('cell_timeout_seconds', 120.0)
        self.declare_parameter('reactive_budget_ms', 20.0)
        self.main = main
        budget = float(self.get_parameter('reactive_budget_ms').value)
        self.stage = ProgramStage(budget_ms=budget)
        self.robot = RosRobot(self, main)
        self.api = ProgramApi(self.robot, self.stage, log, load_embodiment().table_top_z)
        self.runner = CellRunner(
            self.api.functions(), float(self.get_parameter('cell_timeout_seconds').value)
        )
        group = ReentrantCallbackGroup()
        # An endless loop in a guard is stopped well after its budget (the budget itself is
        # judged by run_budgeted): 10x the budget, at least 0.2 s.
        deadline = max(0.2, 10 * budget / 1e3)
        serve_reactive_step(
            self,
            self.stage,
            '/kernel/reactive_step',
            run=lambda fn: main.submit(
                main.reactive, lambda: run_reactive_with_deadline(fn, deadline)
            ),
        )
        ActionServer(
            self,
            RunCell,
            '/kernel/run_cell',
            self._run_cell,
            callback_group=group,
            result_timeout=10,
        )

    def _run_cell(self, goal_handle):
        code = goal_handle.request.code
        result = self.main.submit(self.main.cells, lambda: self._cell(code))
        goal_handle.succeed()
        return result

    def _cell(self, code: str) -> RunCell.Result:
        self.robot.traces = []
        self.api.shown = []
        handled_before = self.api.events_handled
        r: CellResult = self.runner.run(code)
        msg = RunCell.Result(
            status=r.status,
            output=r.output,
            traceback=r.traceback,
            summary=r.summary,
            restored=r.restored,
        )
        if r.event is not None:
            ev = r.event
            msg.event = Event(
                name=ev.event, detail=ev.detail, reasons=list(ev.reasons), skill=ev.skill
            )
        msg.executions = list(self.robot.traces)
        msg.images = [image_msg(img) for _, img in self.api.shown]
        msg.image_captions = [c for c, _ in self.api.shown]
        msg.events_handled = self.api.events_handled - handled_before
        msg.report = self._report()
        return msg

    def _report(self) -> SceneReport:
        try:
            scene: SceneMeasure = self.api.measure_scene()
        except Exception as exc:  # the report must not lose the cell's result
            self.get_logger().error(f'could not measure the scene after the cell: {exc}')
            return SceneReport(measured=False)
        return scene_report(scene)


def scene_report(scene: SceneMeasure) -> SceneReport:
    """The turn report as a message."""
    return SceneReport(
        objects=[
            LocatedObject(
                id=o.id,
                label=o.label,
                position=Point(
                    x=float(o.position[0]), y=float(o.position[1]), z=float(o.position[2])
                ),
                size=Vector3(x=float(o.size[0]), y=float(o.size[1]), z=float(o.size[2])),
                top=float(o.top),
                cameras=list(o.cameras),
            )
            for o in scene.objects
        ],
        left_holds=scene.held.get('left') or '',
        right_holds=scene.held.get('right') or '',
        measured=scene.measured,
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ros_args = argv[argv.index('--ros-args') :] if '--ros-args' in argv else []
    own = argv[: argv.index('--ros-args')] if ros_args else argv
    parser = argparse.ArgumentParser(
        prog='kernel', description='Run program cells for one episode.'
    )
    parser.add_argument(
        '--workspace', help="the program's fresh working directory (default: a new temporary one)"
    )
    parser.add_argument('--log', help='kernel.log: one JSON line per API call')
    parser.add_argument(
        '--no-isolation', action='store_true', help='do not apply Landlock (for debugging only)'
    )
    args = parser.parse_args(own)
    workspace = os.path.realpath(args.workspace or tempfile.mkdtemp(prefix='harness-program-'))
    os.makedirs(workspace, exist_ok=True)
    log_file = open(args.log, 'a', buffering=1) if args.log else None  # noqa: SIM115

    def log(record: dict) -> None:
        if log_file is not None:
            log_file.write(json.dumps(record) + '\n')

    rclpy.init(args=['kernel', *ros_args])
    main_thread = MainThread()
    node = KernelNode(main_thread, log)
    executor = MultiThreadedExecutor(num_threads=4)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    os.chdir(workspace)
    if not args.no_isolation:
        from harness_kernel.isolation import IsolationError, isolate

        try:
            iso = isolate(workspace)
        except IsolationError as exc:
            print(f'kernel: {exc}', file=sys.stderr)
            return 2
        node.get_logger().info(
            f'isolated: writes only in {workspace}, no processes, '
            f'TCP blocked: {iso.network} (Landlock ABI {iso.abi})'
        )
    stopping = threading.Event()

    def stop(_signum, _frame) -> None:
        # Leave the graph cleanly: a participant that vanishes without saying so stays matched
        # in the other processes for its lease time and stalls their large replies.
        stopping.set()
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        while rclpy.ok() and not stopping.is_set():
            main_thread.pump_reactive()
            try:
                job = main_thread.cells.get(timeout=0.002)
            except queue.Empty:
                continue
            job.result = job.fn()
            job.done.set()
    except KeyboardInterrupt:
        pass
    finally:
        # Leave the graph in order: executor, its thread, the node, the context (whose
        # destruction says goodbye to the other participants). Left to the interpreter's
        # teardown, a still-waiting executor thread aborted the process ("terminate called
        # without an active exception") before the goodbye, and the others kept seeing its
        # run_cell server for the DDS lease time, ~20 s.
        executor.shutdown(timeout_sec=5)
        spinner.join(timeout=5)
        node.destroy_node()
        rclpy.try_shutdown()
        get_default_context().destroy()
    return 0


if __name__ == '__main__':
    sys.exit(main())
