"""The driver's node: the model loop's view of the graph. It resets the worker and holds the
episode's outcome token (nobody else sees it), reads the robot and the cameras, runs cells and
the wrap-up in the kernel (`kernel/run_cell`), serves the program's `driver/verify` and
publishes the episode's events on `harness/events`.

Parameters: harness_types.config.DriverConfig (declared, so `ros2 param get /driver ...` shows
what the episode runs with).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from action_msgs.msg import GoalStatus
from harness_bench.task import Outcome as TaskOutcome
from harness_recording.recorder_node import EVENTS_QOS
from harness_recording.trial_data import frames_within
from harness_types.camera import CameraView
from harness_types.cell import CellResult
from harness_types.config import DriverConfig, declare_section, section_values
from harness_types.convert import (
    ENDED_STATUSES,
    camera_view_of,
    cell_result_of,
    compressed_image_msg,
    robot_state_of,
    verdict_into,
)
from harness_types.robot_state import RobotState
from harness_types.scene import ClaimAnswer
from harness_types.wait import (
    ResultExpiredError,
    ServerGoneError,
    presence_check,
    wait_future,
    wait_goal_result,
)
from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import CompressedImage
from std_msgs.msg import String

from harness_msgs.action import RunCell
from harness_msgs.srv import Observe, Outcome, Profile, Reset, State, Verify
from harness_types import names

RESET_ANSWER_S = 90.0  # the longest a reset is waited for


class GraphError(RuntimeError):
    """The graph could not do what was asked; the message says what."""


class DriverNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__(names.DRIVER, **kwargs)
        # (not frozen: each episode's driver parameters are set here, _show)
        self.config = declare_section(self, DriverConfig, frozen=False)
        group = ReentrantCallbackGroup()
        self.token = ''
        self._station_missing = False  # a worker service was not found at the last call
        self._worker = {
            name: self.create_client(kind, names.worker_service(name), callback_group=group)
            for name, kind in (
                ('reset', Reset),
                ('outcome', Outcome),
                ('state', State),
                ('observe', Observe),
                ('profile', Profile),
            )
        }
        self.run_cell_client = ActionClient(self, RunCell, names.RUN_CELL, callback_group=group)
        self.create_service(Verify, names.VERIFY, self._serve_verify, callback_group=group)
        self._events = self._model_images = None
        self._verify: Callable[[str], ClaimAnswer] | None = None
        self._local = None  # the worker node beside this one, when it runs in this process
        self.begin_episode()

    def use_local(self, worker) -> None:
        """Call the worker node of this process directly (its `call_local`: the service's own
        handler under the same lock, the same request and response messages), as the skill
        server beside it does: a camera view's megabytes no longer pass through the middleware
        (three cameras with depth, ~10 ms a call)."""
        self._local = worker

    def begin_episode(self, config: DriverConfig | None = None) -> None:
        """The events and the model's images of a new episode (a warm station's next one) go
        out on publishers of their own: what a late subscriber is given is this episode's,
        and nothing of the earlier episodes stays in memory. `config`: the episode's driver
        section, which the node's parameters then show (`ros2 param get /driver model`)."""
        if config is not None:
            self._show(config)
        for publisher in (self._events, self._model_images):
            if publisher is not None:
                self.destroy_publisher(publisher)
        self._verify = None
        self._events = self.create_publisher(String, names.EVENTS, EVENTS_QOS)
        # Every image the model was sent, kept for a late subscriber as the events are.
        self._model_images = self.create_publisher(CompressedImage, names.MODEL_IMAGES, EVENTS_QOS)

    def _show(self, config: DriverConfig) -> None:
        """Set the declared parameters to `config`'s values, all at once, each of the type its
        declaration gave it (a float field is declared a double; an empty list in the
        station's file leaves the parameter without a value, its declared type stays)."""
        parameters = []
        for name, value in section_values(config).items():
            kind = Parameter.Type(self.describe_parameter(name).type)
            if kind == Parameter.Type.DOUBLE:
                value = float(value)
            parameters.append(
                Parameter(name, value=value)
                if kind == Parameter.Type.NOT_SET
                else Parameter(name, kind, value)
            )
        try:
            result = self.set_parameters_atomically(parameters)
        except Exception as exc:  # rclpy refuses a value of another type by raising
            raise GraphError(f"the driver node's parameters could not be set: {exc}") from None
        if not result.successful:
            raise GraphError(f"the driver node refused this episode's parameters: {result.reason}")
        self.config = config

    def _call(self, service: str, request, timeout: float = 60.0):
        if self._local is not None:
            return self._local.call_local(service, request)
        client = self._worker[service]
        # (once one of the station's services was not found, the next are looked for briefly:
        # a station that died is not waited for again at every call of the episode's end)
        discovery_s = 1.0 if self._station_missing else 15.0
        if not client.service_is_ready() and not client.wait_for_service(timeout_sec=discovery_s):
            self._station_missing = True
            raise GraphError(f'{client.srv_name} is not available')
        self._station_missing = False
        # a station whose process died leaves the graph (its DDS lease runs out): not waited
        # for to the call's timeout
        left = f'{client.srv_name} left the ROS graph before it answered (its station ended?)'
        present = presence_check(client.service_is_ready, left)
        try:
            return wait_future(client.call_async(request), timeout, present, 0.5)
        except ServerGoneError:
            self._station_missing = True
            raise GraphError(left) from None
        except TimeoutError:
            self._station_missing = True
            raise GraphError(f'{client.srv_name} did not answer within {timeout:g} s') from None

    # The worker --------------------------------------------------------------------------------

    def reset(
        self, task: str, layout: int, seed: int, randomize: tuple[str, ...] = ()
    ) -> tuple[str, str]:
        """Reset the worker (with the running episode's token) with the scene randomised on
        `randomize`; keeps the new token."""
        request = Reset.Request(
            task=task, layout=layout, seed=seed, token=self.token, randomize=','.join(randomize)
        )
        # Longer than a backend waits for its robot's first state (the ros2_control backend:
        # 60 s), so that its own words (which controller is silent) come back, not a timeout.
        r = self._call('reset', request, RESET_ANSWER_S)
        if not r.success:
            raise GraphError(r.message)
        self.token = r.token
        return r.instruction, r.description

    def profile(self) -> Profile.Response:
        return self._call('profile', Profile.Request())

    def robot(self) -> RobotState:
        return robot_state_of(self._call('state', State.Request()).state)

    def cameras(
        self, cameras: list[str], depth: bool = False, segmentation: bool = False
    ) -> list[CameraView]:
        request = Observe.Request(cameras=list(cameras), depth=depth, segmentation=segmentation)
        r = self._call('observe', request)
        if not r.success:
            raise GraphError(r.message)
        return [camera_view_of(v) for v in r.views]

    def outcome(self, end: bool = False) -> TaskOutcome:
        """The task's verdict; `end`: the episode's last read (Worker.outcome), after which
        this driver holds no token."""
        r = self._call('outcome', Outcome.Request(token=self.token, end=end))
        if not r.accepted:
            raise GraphError(r.message)
        if end:
            self.token = ''
        return TaskOutcome(bool(r.success), float(r.score), r.detail)

    def release(self) -> None:
        """Release the episode's token if this driver still holds it (an episode that ended
        before its last outcome read: an error, a Ctrl-C), so that a station serving driver
        after driver takes the next one; a station that cannot be asked is left as it is."""
        if self.token:
            with contextlib.suppress(GraphError, TimeoutError):
                self.outcome(end=True)

    # The kernel --------------------------------------------------------------------------------

    def run_cell(
        self,
        code: str,
        timeout: float,
        alive: Callable[[], str],
        wrap_up: bool = False,
        policy_to_end: bool = False,
        max_calls: int = 0,
    ) -> CellResult:
        """Run a cell (or the wrap-up, or the policy-to-end hook); `alive()` says why the
        kernel is gone ('' while it runs), checked while waiting so that a dead kernel is
        noticed at once. `max_calls`: the most API calls the kernel serves the cell (0: no
        bound)."""

        def check() -> None:
            why = alive()
            if why:
                raise GraphError(why)

        try:
            handle = wait_future(
                self.run_cell_client.send_goal_async(
                    RunCell.Goal(
                        code=code,
                        wrap_up=wrap_up,
                        policy_to_end=policy_to_end,
                        max_calls=max_calls,
                    )
                ),
                30.0,
                between=check,
            )
            if not handle.accepted:
                raise GraphError('the kernel refused the cell')
            answered = threading.Event()

            def serve(seconds: float) -> None:
                if answered.wait(seconds):  # an answer came: taken before any check
                    answered.clear()
                    return
                check()

            # a cell whose result response was lost is asked for it again (the kernel keeps
            # a finished cell's result 10 s), not waited for until the timeout
            result = wait_goal_result(
                handle, timeout, serve, answered.set, ENDED_STATUSES, GoalStatus.STATUS_UNKNOWN
            )
        except TimeoutError:
            raise GraphError(f'the kernel did not answer within {timeout:g} s') from None
        except ResultExpiredError:
            raise GraphError('the kernel no longer had the result of the cell it ended') from None
        return cell_result_of(result.result)

    # Events and the verifier ---------------------------------------------------------------------

    def keep_camera_frames(self, cameras: list[str], limit: int = 4000) -> None:
        """From now on keep each camera's JPEG frames (image_raw/compressed, at the worker's
        compressed_every_ticks) in memory, the newest `limit` of each: `camera_frames()`."""
        self._frames: dict[str, list[tuple[float, bytes]]] = {c: [] for c in cameras}
        self._frames_lock = threading.Lock()

        def keep(cam: str, msg: CompressedImage) -> None:
            t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            with self._frames_lock:
                frames = self._frames[cam]
                frames.append((t, bytes(msg.data)))
                del frames[:-limit]

        for cam in cameras:
            self.create_subscription(
                CompressedImage,
                names.camera_compressed(cam),
                lambda msg, cam=cam: keep(cam, msg),
                10,
            )

    def camera_frames(self, start: float, end: float) -> dict[str, list[tuple[float, bytes]]]:
        """The kept JPEG frames shown from episode time `start` to `end`: per camera, the
        last one before `start` and those within."""
        with self._frames_lock:
            return {c: frames_within(f, start, end) for c, f in self._frames.items()}

    def publish_event(self, line: str) -> None:
        """One line of events.jsonl on harness/events (the recorder ends on the `end` event)."""
        self._events.publish(String(data=line))

    def publish_model_image(self, name: str, png: bytes) -> None:
        """An image sent to the model on harness/model_images; `name` (its file's name in the
        run folder) as frame_id: the recorder keeps which call and camera it was. Stamped with
        the episode's time as it is published (a viewer that places messages by their stamps
        had put every one at 0); 0 when the station does not answer."""
        try:
            time = self.robot().time
        except (RuntimeError, TimeoutError):  # (GraphError: the episode is ending anyway)
            time = 0.0
        self._model_images.publish(compressed_image_msg(png, 'png', time, name))

    def events_listeners(self) -> int:
        return self._events.get_subscription_count()

    def serve_verify(self, verify: Callable[[str], ClaimAnswer]) -> None:
        self._verify = verify

    def _serve_verify(self, request: Verify.Request, response: Verify.Response):
        if self._verify is None:
            return verdict_into(response, ClaimAnswer(False, False, 'no verifier in this run'))
        try:
            verdict = self._verify(request.claim)
        except Exception as exc:  # a failed verifier call is an answer the program can read
            verdict = ClaimAnswer(False, False, f'the verifier failed: {exc}')
        return verdict_into(response, verdict)
