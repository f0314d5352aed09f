"""The kernel node (trusted). It maps ROS onto the kernel core (kernel.py): `kernel/run_cell`
(an action: a program cell, or the wrap-up) and `kernel/reactive_step` (the skill server's
per-tick callback) in; the skill actions, `skills/state`, `skills/observe`, `skills/ik` and
`driver/verify` out. Programs run in the sandboxed program process it starts.

Each episode has a kernel core of its own (its perception's tracker, its grips, its log) and a
fresh program process. Started with `--workspace`/`--log` the node serves one episode; started
with `--control FD` (a warm station's kernel) it serves episode after episode as its starter
asks over that socket, one JSON line each way: `prepare` (start the next episode's program
process in a workspace now, while the last episode ends), `begin` (a new kernel core
with that process; kernel.log and the process's output go to the episode's files), `end` (the
program process killed, the log closed). With `--passes DIR` its perception shares passes with
the verifier's eyes of the same station (harness_perception.shared_passes).

    kernel [--workspace DIR] [--log FILE] [--control FD] [--passes DIR] [--ros-args ...]

Parameters: harness_types.config.KernelConfig.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import traceback
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import rclpy
from action_msgs.msg import GoalStatus
from arx_x5_description.embodiment import load_embodiment
from harness_policy.catalog import load_catalog
from harness_reactive.stage import ReactiveResult
from harness_skills.skill_table import SKILLS
from harness_types.cell import CellResult
from harness_types.config import KernelConfig, declare_section
from harness_types.convert import (
    ENDED_STATUSES,
    camera_view_of,
    cell_result_msg,
    claim_answer_of,
    execution_of,
    marker_array_msg,
    point_msg,
    quat_msg,
    robot_state_of,
)
from harness_types.execution import Execution
from harness_types.lanes import LaneClient, LaneService, LaneUnavailableError
from harness_types.markers import located_marks
from harness_types.prediction import Prediction
from harness_types.process import die_with_parent, leave, leave_graph
from harness_types.robot_state import RobotState
from harness_types.scene import ClaimAnswer
from harness_types.wait import (
    GOAL_RESEND_S,
    RESULT_CHECK_S,
    InFlight,
    ResultExpiredError,
    presence_check,
    wait_future,
    wait_goal_result,
    wait_goal_taken,
)
from rclpy.action import ActionClient, ActionServer
from rclpy.action.client import ClientGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.utilities import get_default_context
from unique_identifier_msgs.msg import UUID
from visualization_msgs.msg import MarkerArray

from harness_kernel.api_table import API, enabled_names
from harness_kernel.bounds import ProgramBounds
from harness_kernel.kernel import Kernel
from harness_kernel.program_host import ProgramHost, program_environment
from harness_kernel.program_spawner import Spawner
from harness_kernel.robot_port import Pump
from harness_kernel.sandbox import Limits
from harness_msgs.action import RunCell
from harness_msgs.srv import Ik, Observe, Predict, ReactiveStep, State, Verify
from harness_perception import make_perception
from harness_types import names

DISCOVERY_S = 15.0  # how long a first call waits for its server to appear
# An execution with no max_seconds is bounded by its motion's default, which the kernel does not
# know; its wait for the result assumes at most this much simulated time.
UNSET_BOUND_S = 120.0


def result_bound(max_seconds: float, ceiling: float) -> float:
    """How long (wall seconds) the kernel waits for an execution's result: its bound in
    simulated time (max_seconds; UNSET_BOUND_S when unset) ten times over, as the simulator
    may run slower than real time (cameras rendered every tick on a loaded machine), plus
    30 s; never past `ceiling` (the cell's time and a margin)."""
    simulated = max_seconds if max_seconds > 0 else UNSET_BOUND_S
    return min(ceiling, 10.0 * simulated + 30.0)


PROGRAM_UID_BASE = 61000  # the program process's uid: this plus the episode's ROS domain id
# ... plus this for every other episode of a warm kernel (domain ids end at 232)
PROGRAM_UID_STRIDE = 256


def _lane(node: Node, srv_type, srv_name: str) -> LaneClient:
    name = names.lane_node(names.KERNEL, srv_name.rsplit('/', 1)[-1])
    return LaneClient(name, node, srv_type, srv_name)


class RosRobot:
    """The kernel's robot port over the skill server's interfaces and the driver's verifier."""

    def __init__(self, node: Node, wait_s: float) -> None:
        self.node = node
        self.wait_s = wait_s
        group = ReentrantCallbackGroup()
        self.actions = {
            name: ActionClient(node, spec.action, names.skill_action(name), callback_group=group)
            for name, spec in SKILLS.items()
        }
        # The skill server's read services on lanes of their own at both ends (pick asks
        # skills/ik a dozen times or more: ~7 ms a round trip through the executors).
        self.state_client = _lane(node, State, names.SKILL_STATE)
        self.observe_client = _lane(node, Observe, names.SKILL_OBSERVE)
        self.ik_client = _lane(node, Ik, names.SKILL_IK)
        self.predict_client = _lane(node, Predict, names.SKILL_PREDICT)
        self.verify_client = node.create_client(Verify, names.VERIFY, callback_group=group)
        self.counter = 0

    def _call(self, lane: LaneClient, request, resend_s: float | None = GOAL_RESEND_S):
        """The service's answer to `request`, asked again every `resend_s` while none came
        (these services only read; None for one whose answer may take longer: predict)."""
        for attempt in range(2):
            try:
                return lane.call(request, self.wait_s, resend_s)
            except TimeoutError:
                raise RuntimeError(f'{lane.srv_name} did not answer') from None
            except LaneUnavailableError:
                # Not discovered yet (a request sent before would be lost), or gone: wait for
                # it, then ask again (these services only read).
                if attempt or not lane.wait_for_service(DISCOVERY_S):
                    raise RuntimeError(f'{lane.srv_name} is not available') from None
        raise AssertionError('unreachable')

    def close(self) -> None:
        for lane in (self.state_client, self.observe_client, self.ik_client, self.predict_client):
            lane.close()

    def execute(self, skill: str, args: dict, reactive: bool, pump: Pump) -> Execution:
        spec = SKILLS[skill]
        client = self.actions[skill]
        if not client.server_is_ready() and not client.wait_for_server(timeout_sec=DISCOVERY_S):
            raise RuntimeError(f'the skill server does not offer {names.skill_action(skill)}')
        goal = spec.goal(args)
        self.counter += 1
        goal.options.reactive = bool(reactive or API[skill].reactive)
        goal.options.execution_id = f'{skill}-{self.counter}'
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        try:
            handle, taken_before = wait_goal_taken(
                lambda: client.send_goal_async(goal, goal_uuid=goal_id),
                self.wait_s,
                pump.serve,
                pump.wake,
            )
        except TimeoutError:
            raise RuntimeError(f'the skill server did not take the {skill} goal') from None
        if taken_before:  # the first request's answer was lost: the goal runs; its result
            accepted = spec.action.Impl.SendGoalService.Response(accepted=True)
            handle = ClientGoalHandle(client, goal_id, accepted)
        elif not handle.accepted:
            raise RuntimeError(f'{names.skill_action(skill)} refused the goal')
        bound = result_bound(float(args.get('max_seconds') or 0.0), self.wait_s)
        gone = f'the skill server left the ROS graph while {skill} ran (its station ended?)'
        try:
            result = self._result(handle, bound, pump, presence_check(client.server_is_ready, gone))
        except TimeoutError:
            handle.cancel_goal_async()
            raise RuntimeError(
                f'no result from the skill server for {skill} within {bound:g} s (the '
                f"execution's bound, max_seconds {args.get('max_seconds') or 'unset'}, with a "
                'margin); the goal was cancelled'
            ) from None
        except BaseException:
            handle.cancel_goal_async()  # the cell stopped: stop the arm too
            raise
        return execution_of(result.execution)

    @staticmethod
    def _result(handle, bound: float, pump: Pump, present: Callable[[], None] | None = None):
        """The goal's result within `bound` seconds (TimeoutError past it); one whose response
        was lost is asked for again (wait_goal_result). A server that no longer has the result
        (it keeps one for skill_server.result_timeout_seconds) answers STATUS_UNKNOWN: an error,
        never an empty result taken for the execution's. `present`: a presence_check of
        the server, made while the kernel serves its program."""

        def serve(wait_s: float) -> None:
            if present is not None:
                present()
            pump.serve(wait_s)

        try:
            response = wait_goal_result(
                handle,
                bound,
                serve,
                pump.wake,
                ENDED_STATUSES,
                GoalStatus.STATUS_UNKNOWN,
                RESULT_CHECK_S,
            )
        except ResultExpiredError:
            raise RuntimeError(
                'the skill server no longer had the result of the goal it ended (its '
                'answer was lost and the result expired)'
            ) from None
        return response.result

    def state(self) -> RobotState:
        return robot_state_of(self._call(self.state_client, State.Request()).state)

    def views(self, cameras: list[str], depth: bool = True, segmentation: bool = True):
        r = self._call(
            self.observe_client,
            Observe.Request(cameras=list(cameras), depth=depth, segmentation=segmentation),
        )
        if not r.success:
            raise ValueError(r.message)
        return [camera_view_of(v) for v in r.views]

    def predict(
        self,
        horizon_s: float,
        actions: np.ndarray | None = None,
        entry: dict | None = None,
        instruction: str = '',
        cameras: tuple[str, ...] = (),
    ) -> Prediction:
        req = Predict.Request(horizon_seconds=float(horizon_s), cameras=list(cameras))
        if entry is not None:
            req.policy, req.policy_endpoint = entry['name'], entry['endpoint']
            req.instruction, req.action_hz = instruction, float(entry['action_hz'])
            req.policy_cameras, req.policy_depth = list(entry['cameras']), bool(entry['depth'])
            req.policy_timeout_seconds = float(entry['timeout_seconds'])
        else:
            req.actions = [float(v) for v in np.asarray(actions, dtype=float).ravel()]
        r = self._call(self.predict_client, req, None)
        if not r.success:
            raise RuntimeError(f'the world model could not predict: {r.message}')
        return Prediction(
            r.model,
            np.array(r.times),
            np.array(r.states).reshape(-1, 14),
            [camera_view_of(v) for v in r.views],
            r.stopped,
        )

    def reachable(self, arm: str, position, quat, collision_free: bool = False) -> bool:
        req = Ik.Request(
            arm=arm,
            position=point_msg(position),
            use_orientation=True,
            orientation=quat_msg(quat),
            collision_free=collision_free,
        )
        return bool(self._call(self.ik_client, req).success)

    def verify(self, claim: str) -> ClaimAnswer:
        if not self.verify_client.wait_for_service(timeout_sec=1.0):
            return ClaimAnswer(
                False, False, 'no verifier in this run (no driver serves driver/verify)'
            )
        request = Verify.Request(claim=claim)
        try:
            return claim_answer_of(wait_future(self.verify_client.call_async(request), self.wait_s))
        except TimeoutError:
            raise RuntimeError(f'{self.verify_client.srv_name} did not answer') from None


class KernelNode(Node):
    def __init__(self, warm: bool = False, passes: Path | None = None, **kwargs) -> None:
        """`warm`: a warm station's kernel (episodes begin and end as its starter asks);
        `passes`: the station's folder of perception passes shared with the verifier's eyes
        (harness_perception.shared_passes; None: locate()'s passes are its own)."""
        super().__init__(names.KERNEL, **kwargs)
        self.passes = passes
        self.config = config = declare_section(self, KernelConfig)
        self.embodiment = emb = load_embodiment()
        self.domain = int(os.environ.get('ROS_DOMAIN_ID', '0') or 0)
        self.doc_values = {
            'reactive_budget_ms': config.reactive_budget_ms,
            'control_hz': emb.rates.control_hz,
            'max_contact_force_n': emb.shield.max_contact_force_n,
        }
        self.api = enabled_names(config.api_names, bool(config.policies))
        self.catalog = load_catalog(config.policies, emb) if config.policies else None
        self.robot = RosRobot(self, wait_s=config.cell_timeout_seconds + 600.0)
        self.markers = self.create_publisher(MarkerArray, names.MARKERS, 10)
        self.kernel: Kernel | None = None  # the running episode's core
        # Cells running on any core: one that outlives its episode's end could still touch
        # the descriptors its core's link closed, which the next program process may reuse.
        self._cells = InFlight()
        self.refusal = ''  # why this kernel serves no other episode (end's answer), once said
        self.log = EpisodeLog(None)  # the running episode's
        self.output = ProcessOutput() if warm else None
        # Program processes are started on this one thread (the next episode's while the last
        # one ends); the spawner that forks them dies with the node (PR_SET_PDEATHSIG).
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix='program_starter')
        # Forks each episode's program process with its modules imported (started at the
        # first episode): ~13-20 ms a program instead of ~120.
        self._spawner = Spawner(program_environment(None))
        self._ahead: tuple[ProgramHost, Future] | None = None
        self._hosts = 0
        # Served on a node of its own: called every tick of an execution with program code
        # (harness_types/lanes.py says why).
        self.reactive_lane = LaneService(
            names.KERNEL_REACTIVE, self, ReactiveStep, names.REACTIVE_STEP, self._reactive_step
        )
        group = ReentrantCallbackGroup()
        ActionServer(
            self, RunCell, names.RUN_CELL, self._run_cell, callback_group=group, result_timeout=10
        )

    # Episodes ------------------------------------------------------------------------------

    def _host(self, workspace: Path) -> ProgramHost:
        self._hosts += 1
        c = self.config
        # Successive episodes' program processes have uids of their own: one that outlived its
        # kill could neither signal the next one nor read its files.
        uid = PROGRAM_UID_BASE + self.domain + PROGRAM_UID_STRIDE * ((self._hosts + 1) % 2)
        limits = Limits(c.program_memory_mb, c.program_file_size_mb, c.program_open_files)
        return ProgramHost(workspace, uid, limits, self.api, self.doc_values, self._spawner)

    def prepare(self, workspace: Path) -> None:
        """Start the next episode's program process in `workspace` now (on the starter thread;
        `begin` takes it)."""
        if self.refusal:
            raise RuntimeError(self.refusal)
        self._discard_ahead()
        host = self._host(workspace)
        self._ahead = (host, self._starter.submit(host.start))

    def _discard_ahead(self) -> None:
        if self._ahead is not None:
            host, future = self._ahead
            self._ahead = None
            with contextlib.suppress(Exception):
                future.result()
            host.stop()

    def begin(self, workspace: Path, log: Path | None) -> dict:
        """A new episode: a kernel core of its own with the program process started ahead in
        `workspace` (started now when none was, or it died); kernel.log at `log` and this
        process's output beside it (`.out`). Returns the sandbox the program reported;
        ProgramStartError when it could not start."""
        self.end()
        if self.refusal:
            raise RuntimeError(self.refusal)
        if self._ahead is None or self._ahead[0].workspace != Path(workspace):
            self.prepare(Path(workspace))
        host, future = self._ahead
        self._ahead = None
        with contextlib.suppress(Exception):  # tried once more below, and reported then
            future.result()
        if not host.alive():
            self._starter.submit(host.start).result()
        self.log = EpisodeLog(log)
        if self.output is not None and log is not None:
            self.output.to(log.with_suffix('.out'))
        c, emb = self.config, self.embodiment
        self.robot.counter = 0  # execution ids count from 1 in every episode
        kernel = Kernel(
            self.robot,
            host,
            c.cell_timeout_seconds,
            c.reactive_budget_ms,
            emb.table_top_z,
            emb.gripper.closed_below,
            self.api,
            self.log.write,
            self._show_located,
            make_perception(
                c.perception,
                emb,
                service_url=c.perception_service_url,
                service_timeout_s=c.perception_service_timeout_seconds,
                shared_passes=self.passes,
            ),
            self.catalog,
            c.world_model_shadow,
            emb.rates.control_hz,
            ProgramBounds.of(c),
        )
        try:
            sandbox = kernel.link.start(adopt=True)
        except Exception:
            kernel.close()
            self._close_log()
            raise
        self.kernel = kernel
        self.get_logger().info(f'program process {host.pid} sandboxed: {sandbox}')
        return sandbox

    def end(self, wait_s: float = 0.0) -> str:
        """The episode ends: its program process killed, its log closed. Then waits up to
        `wait_s` for its cells to return; says why this kernel must serve no other episode
        when one still runs ('' otherwise)."""
        kernel, self.kernel = self.kernel, None
        if kernel is not None:
            kernel.close()
        self._close_log()
        if self._cells.wait_none(wait_s):
            return ''
        self.refusal = (
            f'{self._cells.count} cell(s) of an ended episode still run: this kernel serves no '
            'other episode (their core could touch descriptors a new program process reuses)'
        )
        return self.refusal

    def _close_log(self) -> None:
        self.log.close()
        if self.output is not None:
            self.output.back()

    def close(self) -> None:
        self.end()
        self._discard_ahead()
        self._starter.shutdown(wait=True)
        self._spawner.close()

    def destroy_node(self) -> None:
        self.reactive_lane.close()
        self.robot.close()
        super().destroy_node()

    def _show_located(self, objects) -> None:
        self.markers.publish(marker_array_msg(located_marks(objects)))

    def _run_cell(self, goal_handle):
        goal = goal_handle.request
        # Counted before the core is read: an `end` that found no cell running had swapped
        # the core out already, so this cell finds none.
        with self._cells:
            kernel = self.kernel
            if kernel is None:  # between a warm kernel's episodes (its starter's handshake)
                cell = CellResult('error', summary='no episode is running in this kernel')
            elif goal.wrap_up:
                cell = kernel.wrap_up()
            elif goal.policy_to_end:
                cell = kernel.policy_to_end()
            else:
                cell = kernel.run_cell(goal.code, goal.max_calls)
        # the message first: succeed() says the cell ended (a driver that has no result 2 s
        # later asks again) and starts the server's 10 s keeping of its result
        result = cell_result_msg(cell)
        goal_handle.succeed()
        return result

    def _reactive_step(self, request: ReactiveStep.Request, response: ReactiveStep.Response):
        try:
            obs = robot_state_of(request.state, {v.name: camera_view_of(v) for v in request.views})
            kernel = self.kernel
            if kernel is None:
                raise RuntimeError('no episode is running in this kernel')
            r = kernel.reactive_step(obs, bool(request.call_controller))
        except Exception as exc:  # a bug here: the execution ends with it, not with a timeout
            self.get_logger().error(f'reactive_step failed:\n{traceback.format_exc()}')
            r = ReactiveResult(fault=f'the kernel failed: {type(exc).__name__}: {exc}')
        response.fault = bool(r.fault)
        response.fault_reason = r.fault
        response.guard_fired, response.guard_action = r.guard_fired, r.guard_action
        response.guard_detail = r.guard_detail
        response.until_satisfied = r.until_satisfied
        response.target_keys = list(r.targets)
        response.target_lengths = [int(v.shape[0]) for v in r.targets.values()]
        response.target_values = [float(x) for v in r.targets.values() for x in v]
        return response


class EpisodeLog:
    """One episode's kernel.log (one JSON line per record), written from several threads; once
    closed it takes nothing more (a late record of an ended episode's core never reaches the
    next episode's log)."""

    def __init__(self, path: Path | None) -> None:
        self._lock = threading.Lock()
        self._file = open(path, 'a', buffering=1) if path is not None else None  # noqa: SIM115

    def write(self, record: dict) -> None:
        with self._lock:
            if self._file is not None:
                self._file.write(json.dumps(record, default=str) + '\n')

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


class ProcessOutput:
    """A warm kernel's own output (ROS's log lines, a traceback) goes beside the running
    episode's kernel.log, and back to its starter's file between episodes."""

    def __init__(self) -> None:
        self._between = -1

    def to(self, path: Path) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        if self._between < 0:
            self._between = os.dup(1)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)

    def back(self) -> None:
        if self._between >= 0:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(self._between, 1)
            os.dup2(self._between, 2)


# How long a warm kernel's `end` waits for the ended episode's cells to return (its program
# process is killed first, which ends a cell that waits on it at once).
CELL_END_WAIT_S = 10.0


def serve_control(node: KernelNode, sock: socket.socket, stopping: threading.Event) -> None:
    """A warm station's requests, one JSON line each, answered in order until the socket
    closes (then the kernel stops)."""
    with sock, sock.makefile('r') as lines:
        for line in lines:
            try:
                request = json.loads(line)
                op = request.get('op')
                reply: dict = {'ok': True}
                if op == 'prepare':
                    node.prepare(Path(request['workspace']))
                elif op == 'begin':
                    log = request.get('log')
                    reply['sandbox'] = node.begin(
                        Path(request['workspace']), Path(log) if log else None
                    )
                    reply['pid'] = node.kernel.host.pid
                elif op == 'end':
                    why = node.end(CELL_END_WAIT_S)
                    if why:
                        reply = {'ok': False, 'error': why}
                else:
                    reply = {'ok': False, 'error': f'no such request: {op!r}'}
            except Exception as exc:  # said to the station, which ends the episode with it
                reply = {'ok': False, 'error': f'{type(exc).__name__}: {exc}'}
            try:
                sock.sendall((json.dumps(reply, default=str) + '\n').encode())
            except OSError:
                break
    stopping.set()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ros_args = argv[argv.index('--ros-args') :] if '--ros-args' in argv else []
    own = argv[: argv.index('--ros-args')] if ros_args else argv
    parser = argparse.ArgumentParser(
        prog='kernel', description='Run program cells for one episode in a sandboxed process.'
    )
    parser.add_argument(
        '--workspace', help="the program's working directory (default: a new temporary one)"
    )
    parser.add_argument('--log', help='kernel.log: one JSON line per API call and execution')
    parser.add_argument(
        '--control',
        type=int,
        metavar='FD',
        help="a warm station's socket (an inherited descriptor): episodes begin and end as it "
        'asks; --workspace and --log are then not used',
    )
    parser.add_argument(
        '--passes',
        metavar='DIR',
        help="the station's folder of perception passes shared with the verifier's eyes "
        "(made by the station for its user alone; default: locate()'s passes are its own)",
    )
    args = parser.parse_args(own)
    rclpy.init(args=['kernel', *ros_args])
    node = KernelNode(
        warm=args.control is not None, passes=Path(args.passes) if args.passes else None
    )
    control = None
    if args.control is not None:
        control = socket.socket(fileno=args.control)
    else:
        workspace = Path(os.path.realpath(args.workspace or tempfile.mkdtemp(prefix='harness-')))
        workspace.mkdir(parents=True, exist_ok=True)
        try:
            node.begin(workspace, Path(args.log) if args.log else None)
        except Exception as exc:
            print(
                f'kernel: the program process could not start: {exc}', file=sys.stderr, flush=True
            )
            node.close()
            leave_graph([node], get_default_context())
            return 2
    executor = MultiThreadedExecutor(num_threads=6)
    executor.add_node(node)
    stopping = threading.Event()

    def stop(_signum, _frame) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    die_with_parent()  # after the handler: a parent gone already stops the kernel in order
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    if control is not None:
        threading.Thread(
            target=serve_control, args=(node, control, stopping), name='control', daemon=True
        ).start()
    try:
        while rclpy.ok() and not stopping.is_set():
            stopping.wait(0.1)
    finally:
        # Leave the graph in order: executor, its thread, the node, the context (whose
        # destruction says goodbye to the other participants). Left to the interpreter's
        # teardown, a still-waiting executor thread aborted the process before the goodbye,
        # and the others kept seeing its run_cell server for the DDS lease time, ~20 s.
        node.close()
        executor.shutdown(timeout_sec=5)
        spinner.join(timeout=5)
        leave_graph([node], get_default_context())
    return 0


if __name__ == '__main__':
    leave(main())  # the graph told goodbye and the log closed: no teardown
