"""The node graph of one episode: the station (worker and skill server) and the driver's node
in this process, the kernel in its own process (which runs programs in its sandboxed program
process), and the recorder in its own. Implements the episode's `EpisodeStation`
(harness_driver.episode)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from arx_x5_description.embodiment import load_embodiment
from harness_bench.task import PICTURE, Outcome
from harness_bench.tasks import TASKS
from harness_driver.driver_node import DriverNode, GraphError
from harness_driver.episode_types import EpisodeStart
from harness_recording.bag import episode_topics
from harness_recording.recording_notes import RECORDER_OUTPUT, judge_recording, recorder_report
from harness_types.camera import CameraView
from harness_types.cell import CellResult
from harness_types.config import load_config
from harness_types.process import process_stopped
from harness_types.robot_state import RobotState
from harness_types.scene import ClaimAnswer
from rclpy.node import Node
from rclpy.publisher import Publisher

from harness_bringup.kernel_process import KernelProcess, KernelStartError
from harness_bringup.passes_folder import PassesFolder, new_passes_folder
from harness_bringup.processes import child_environment, wait_or_kill
from harness_bringup.program_workspace import collect_program_workspace, new_program_workspace
from harness_bringup.station_graph import GraphStartError, StationGraph
from harness_types import names


def _recorder_matched(
    publishers: list[tuple[Node, Publisher]], gone: frozenset[tuple[int, ...]] = frozenset()
) -> bool:
    """Whether each publisher has matched the recorder (and every other subscription the
    graph lists for its topic). `gone`: the subscriptions (endpoint GIDs) of recorders that
    were replaced: a killed one stays listed, and matched, until its lease runs out."""
    for node, publisher in publishers:
        listed = node.get_subscriptions_info_by_topic(publisher.topic_name)
        if not any(
            s.node_name == names.RECORDER and tuple(s.endpoint_gid) not in gone for s in listed
        ):
            return False
        if publisher.get_subscription_count() < len(listed):
            return False
    return True


def recorder_subscriptions(publishers: list[tuple[Node, Publisher]]) -> set[tuple[int, ...]]:
    """The endpoint GIDs of the recorder's subscriptions to the publishers' topics."""
    return {
        tuple(s.endpoint_gid)
        for node, publisher in publishers
        for s in node.get_subscriptions_info_by_topic(publisher.topic_name)
        if s.node_name == names.RECORDER
    }


class EpisodeGraph(StationGraph):
    """Start with `with EpisodeGraph(params, bag) as g:`; everything stops on exit. `params`
    is the run's parameter file; `bag` where the recorder writes (None: no recording);
    `attach`: join a station already running in ROS_DOMAIN_ID instead of starting one;
    `lean`: a lean recording (driver.recording lean: harness_recording.bag.episode_topics)."""

    def __init__(
        self,
        params: Path | None = None,
        bag: Path | None = None,
        attach: bool = False,
        lean: bool = False,
    ) -> None:
        super().__init__('graph_client', params, attach=attach)
        self.bag = bag
        self.lean = lean
        self.notes: dict = {}  # what became of the recording (the episode's summary shows it)
        self.kernel: KernelProcess | None = None
        self.recorder: subprocess.Popen | None = None
        self._recorder_out = None
        # the worker's state_messages_published as a bag opened (None: not known, attached)
        self._states_at_bag: dict[str, int] | None = None
        # the subscriptions of recorders replaced (killed or stopped): not the recorder's now
        self._replaced_recorders: frozenset[tuple[int, ...]] = frozenset()
        self.foxglove = None  # the live view's bridge, when served
        # Perception passes the verifier's eyes and the kernel share (passes_folder.py).
        self._passes_held: PassesFolder | None = None

    def __enter__(self) -> EpisodeGraph:
        try:
            super().__enter__()
        except GraphStartError as exc:
            raise GraphError(str(exc)) from None
        try:
            self.driver = DriverNode(context=self.context)
        except Exception as exc:
            self.__exit__()
            raise GraphError(f'the driver node did not start: {exc}') from None
        self.add_node(self.driver)
        if not self.attach:
            self.driver.use_local(self.worker)
        profile = self.driver.profile()
        if profile.kind != 'robot' or len(profile.command_layout) != 14:
            self.__exit__()
            raise GraphError(
                f'the worker embodies a {profile.kind!r} with {len(profile.command_layout)} '
                f'command entries ({profile.robot}, backend {profile.backend}); this driver '
                'drives a dual-arm robot with 14'
            )
        self.notes['backend'] = profile.backend
        self.notes['perception'] = load_config(self.params).kernel.perception
        self._passes_held = new_passes_folder()
        return self

    # EpisodeStation ----------------------------------------------------------------------------

    def reset(
        self, task: str, layout: int = 0, seed: int = 0, randomize: tuple[str, ...] = ()
    ) -> EpisodeStart:
        instruction, description = self.driver.reset(task, layout, seed, randomize)
        pictures = (PICTURE,) if TASKS[task].picture else ()
        return EpisodeStart(instruction, description, pictures)

    def robot(self) -> RobotState:
        return self.driver.robot()

    def cameras(
        self, names: list[str], depth: bool = False, segmentation: bool = False
    ) -> list[CameraView]:
        return self.driver.cameras(names, depth, segmentation)

    def outcome(self, end: bool = False) -> Outcome:
        return self.driver.outcome(end)

    def keep_camera_frames(self) -> None:
        """Keep every camera's JPEG frames from now on (camera_frames gives them back)."""
        self.driver.keep_camera_frames(list(load_embodiment().cameras))

    def camera_frames(self, start: float, end: float) -> dict[str, list[tuple[float, bytes]]]:
        return self.driver.camera_frames(start, end)

    def estop_at(self, step: int | None, cut: bool = False) -> None:
        """The skill server's emergency stop engaged so that the motion ends at `step` (None:
        not): SkillServer.estop_at. In this process's station only."""
        if self.attach:
            raise GraphError('the emergency stop at a step needs the station of this process')
        self.skills.estop_at(step, cut)

    def estop(self, engage: bool) -> None:
        """Engage or release the skill server's emergency stop (over skills/estop when the
        station runs elsewhere)."""
        if not self.attach:
            self.skills.estop(engage)
            return
        from harness_types.wait import wait_future

        from harness_msgs.srv import Estop

        client = self.client.create_client(Estop, names.SKILL_ESTOP)
        try:
            if not client.wait_for_service(timeout_sec=5.0):
                raise GraphError(f'{names.SKILL_ESTOP} is not available')
            wait_future(client.call_async(Estop.Request(engage=engage)), 10.0)
        finally:
            self.client.destroy_client(client)

    def serve_verify(self, verify: Callable[[str], ClaimAnswer]) -> None:
        self.driver.serve_verify(verify)

    def start_kernel(self, workspace: Path, log: Path) -> None:
        # The program works in a folder whose name says nothing (program_workspace.py); its
        # files move into the run folder when the kernel stops.
        self.workspace = workspace
        self.program_workspace = new_program_workspace(workspace)
        self.kernel = KernelProcess(
            self.driver.run_cell_client,
            self.domain_id,
            self.program_workspace,
            log,
            ['--params-file', str(self.params)] if self.params else [],
            passes=self.passes,
        )
        # The kernel and the recorder start side by side (each takes ~1 s to import and join
        # the domain).
        self.kernel.launch()
        recording = self.bag is not None and self.recorder is None
        if recording:
            self.launch_recorder(self.bag)
        try:
            self.kernel.wait_ready()
        except KernelStartError as exc:
            raise GraphError(str(exc)) from None
        if recording:
            try:
                self.wait_recorder(self.bag)
            except GraphError as exc:  # an episode without a bag beats no episode
                self.notes['bag_error'] = str(exc)

    def _kernel_gone(self) -> str:
        return self.kernel.death() if self.kernel is not None else 'no kernel is running'

    def run_cell(self, code: str, timeout: float = 900.0, max_calls: int = 0) -> CellResult:
        return self.driver.run_cell(code, timeout, self._kernel_gone, max_calls=max_calls)

    def wrap_up(self, timeout: float = 900.0) -> CellResult:
        return self.driver.run_cell('', timeout, self._kernel_gone, wrap_up=True)

    def policy_to_end(self, timeout: float = 900.0) -> CellResult:
        return self.driver.run_cell('', timeout, self._kernel_gone, policy_to_end=True)

    def stop_kernel(self) -> None:
        # An execution a cell left running (the driver stopped waiting for it) ends at its next
        # tick: nothing moves the robot after the episode's program, nor outside its bag.
        skills = None if self.attach else getattr(self, 'skills', None)
        if skills is not None:
            skills.end_executions()
        if self.kernel is not None:
            # The episode's last kernel: no other kernel of this graph follows it (a later
            # episode in this domain handshakes with its own kernel before trusting it).
            self.kernel.stop(wait_gone=False)
            self.kernel = None
            collect_program_workspace(self.workspace)

    # The recorder ---------------------------------------------------------------------------

    def launch_recorder(self, bag: Path) -> None:
        """Start the recorder process (rosbag2 of the episode); wait_recorder() waits until it
        listens."""
        command = [sys.executable, '-m', 'harness_recording.recorder_node', str(bag)]
        if self.lean:
            command.append('--lean')
        self._recorder_out = open(bag.with_name(RECORDER_OUTPUT), 'w')  # noqa: SIM115
        self.note_bag_opened()
        self.recorder = subprocess.Popen(
            command,
            env=child_environment(self.domain_id),
            stdout=self._recorder_out,
            stderr=subprocess.STDOUT,
        )

    def wait_recorder(self, bag: Path, timeout: float = 20.0) -> None:
        """Wait until the launched recorder holds the events and has matched every topic."""
        deadline = time.monotonic() + timeout
        if not self._recorder_waited(lambda: self.driver.events_listeners() >= 1, deadline):
            raise GraphError(f'the recorder did not start (see {bag.with_name(RECORDER_OUTPUT)})')
        # From here the recorder holds the episode's events, whatever happens next.
        self.notes['bag'] = bag.name
        # Listening to the events is not listening to everything: each topic matches on its
        # own (a camera's first frame was lost under load). The bag is complete only once
        # every publisher of this process reaches the recorder.
        self.wait_matched(self._recorded_publishers(), deadline)

    def wait_matched(self, publishers: list[tuple[Node, Publisher]], deadline: float) -> None:
        """Wait until each of `publishers` reaches the recorder; a bag_warning when one does not
        by `deadline` (time.monotonic())."""
        gone = self._replaced_recorders
        if not self._recorder_waited(lambda: _recorder_matched(publishers, gone), deadline):
            self.notes['bag_warning'] = (
                'the recorder had not matched every topic when the episode started: '
                'the first messages of some topics may be missing'
            )

    def _recorder_waited(self, ready: Callable[[], bool], deadline: float) -> bool:
        """Wait until `ready()`; False when the recorder ended, was stopped (SIGSTOP) or
        `deadline` (time.monotonic()) passed first."""
        while not ready():
            if (
                self.recorder.poll() is not None
                or process_stopped(self.recorder.pid)
                or time.monotonic() > deadline
            ):
                return False
            time.sleep(0.02)
        return True

    def note_bag_opened(self) -> None:
        """A bag opens now: the states this process's worker publishes from here are the ones
        it must hold (none known when the worker runs in another process, attached)."""
        worker = None if self.attach else self.worker
        self._states_at_bag = None if worker is None else dict(worker.state_messages_published)

    def published_into_bag(self) -> dict[str, int] | None:
        """The messages of the robot's state the worker published since the bag opened, by
        topic (None when they are not known)."""
        if self._states_at_bag is None:
            return None
        now = self.worker.state_messages_published
        return {topic: now[topic] - n for topic, n in self._states_at_bag.items()}

    def _recorded_publishers(self) -> list[tuple[Node, Publisher]]:
        """Every publisher in this process of a topic the recorder records, with its node."""
        topics = episode_topics(load_embodiment().cameras, self.lean)
        out = []
        for node in self.executor.get_nodes():
            recorded = {node.resolve_topic_name(name) for name in topics}
            out += [(node, p) for p in node.publishers if p.topic_name in recorded]
        return out

    def serve_foxglove(self, port: int) -> None:
        """Serve the episode's topics to Foxglove on `port` (0: any free port) until the end."""
        from harness_driver.foxglove_node import FoxgloveBridge

        cameras = list(load_embodiment().cameras)
        try:
            self.foxglove = FoxgloveBridge(cameras, port, context=self.context)
        except Exception as exc:  # a port in use, typically
            raise GraphError(f'the Foxglove server did not start on port {port}: {exc}') from None
        self.add_node(self.foxglove)

    @property
    def foxglove_port(self) -> int | None:
        return self.foxglove.port if self.foxglove is not None else None

    def publish_event(self, line: str) -> None:
        self.driver.publish_event(line)

    def publish_model_image(self, name: str, png: bytes) -> None:
        self.driver.publish_model_image(name, png)

    def stop_recording(self, timeout: float = 15.0) -> dict:
        """Wait for the recorder to close the bag after the `end` event; stop it otherwise.
        Returns the notes for the summary (whether the bag is complete)."""
        if self.recorder is None:
            return {}
        complete = True
        deadline = time.monotonic() + timeout
        while self.recorder.poll() is None:
            if time.monotonic() > deadline or process_stopped(self.recorder.pid):
                complete = False
                break
            time.sleep(0.02)
        if not complete:
            if process_stopped(self.recorder.pid):
                self.recorder.kill()
            else:
                self.recorder.terminate()
            wait_or_kill(self.recorder, 5)
        self._recorder_out.close()
        code, self.recorder = self.recorder.returncode, None
        report = recorder_report(self.bag.with_name(RECORDER_OUTPUT))
        return judge_recording(self.notes, report, complete, code, self.published_into_bag())

    def __exit__(self, *exc) -> None:
        if self.foxglove is not None:
            self.executor.remove_node(self.foxglove)
            self.foxglove.close()
            self.foxglove = None
        self.stop_kernel()
        if self.recorder is not None:
            self.recorder.terminate()
            self.stop_recording()
        self._remove_passes()
        driver = getattr(self, 'driver', None)
        if self.attach and driver is not None:  # (a station of its own ends with the graph)
            driver.release()
        super().__exit__(*exc)

    @property
    def passes(self) -> Path | None:
        """The station's folder of shared perception passes, while the graph holds one."""
        return self._passes_held.path if self._passes_held is not None else None

    def _remove_passes(self) -> None:
        if self._passes_held is not None:
            self._passes_held.remove()
            self._passes_held = None
