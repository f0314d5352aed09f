"""The worker core: one episode of a bench task on a station backend, every command through
the shield.

The node (`worker_node.py`) maps ROS services onto these methods; tests and benchmarks call
them directly. Nothing here imports rclpy, and nothing here knows which backend it drives.
"""

from __future__ import annotations

import contextlib
import secrets
from dataclasses import dataclass

import numpy as np
from arx_x5_description.embodiment import ARMS, Embodiment
from harness_bench.randomization import AXES, NO_VARIATION, SceneVariation, table_offset, vary
from harness_bench.task import PICTURE, Conventions, Outcome, Task
from harness_bench.tasks import make_task
from harness_shield.config import shield_config
from harness_shield.shield import Shield
from harness_types.camera import CameraView
from harness_types.execution import TASK_SUCCEEDED
from harness_types.robot_state import RobotState, arm_slice

from harness_worker.kinematics import IKResult, Pose, StationKinematics
from harness_worker.layout_feasibility import StationFeasibility
from harness_worker.planner import PlanResult, plan_path
from harness_worker.station import RobotNotAnswering, Station, make_station

PICTURE_BACKGROUND = (200, 200, 200)  # a task picture's plain background


class WorkerError(RuntimeError):
    """A request the worker refuses; the message says why."""


@contextlib.contextmanager
def _answering():
    """A robot that does not answer refuses the request (the worker node answers it)."""
    try:
        yield
    except RobotNotAnswering as exc:
        raise WorkerError(f'the robot did not answer: {exc}') from None


@dataclass(frozen=True)
class ResetResult:
    instruction: str
    description: str
    state: RobotState
    token: str
    variation: SceneVariation = NO_VARIATION


@dataclass(frozen=True)
class TickResult:
    accepted: bool
    reasons: list[str]
    state: RobotState
    episode_ended: bool
    rejected_arms: tuple[str, ...] = ()  # the arms the shield's reasons name


@dataclass(frozen=True)
class Profile:
    kind: str
    robot: str
    command_layout: list[str]
    control_hz: float
    physics_hz: float
    physics_steps_per_tick: int
    backend: str


class Worker:
    """One station, one episode at a time. `station` defaults to the `mujoco` backend."""

    def __init__(self, emb: Embodiment, urdf: str, station: Station | None = None) -> None:
        self.emb = emb
        self.urdf = urdf
        self.kinematics = StationKinematics(urdf, emb)
        self.feasibility = StationFeasibility(self.kinematics, emb)
        self.station = station if station is not None else make_station('mujoco', emb, urdf)
        self.shield = Shield(
            shield_config(emb), self.kinematics.link6_positions, self.station.contacts
        )
        self.conventions = Conventions(
            emb.gripper.open_above, emb.home_tolerance_m, emb.home_tolerance_rad
        )
        self.task: Task | None = None
        # Whether an episode ends at the tick the simulator judges its task done (the bench's
        # rule; WorkerConfig.end_on_success)
        self.end_on_success = True
        self.variation = NO_VARIATION
        self.step = 0
        self._token: str | None = None

    # Episode ------------------------------------------------------------------------------

    def reset(
        self, task: str, layout: int, seed: int, token: str = '', randomize: tuple[str, ...] = ()
    ) -> ResetResult:
        """Start an episode; `randomize`: the axes of harness_bench.randomization drawn from
        `seed` (simulation only). While one runs, only the holder of its token may reset
        again."""
        if self._token is not None and not secrets.compare_digest(token, self._token):
            raise WorkerError(
                'an episode is running on this station: reset needs the token its reset '
                'returned (its driver releases it as the episode ends; a driver that died '
                'holding it leaves the station to be restarted)'
            )
        if seed < 0:
            raise WorkerError(f'a seed is a non-negative integer, not {seed}')
        unknown = [a for a in randomize if a not in AXES]
        if unknown:
            raise WorkerError(f'unknown randomisation axis {", ".join(unknown)}; axes: {AXES}')
        if randomize and not self.station.simulated:
            raise WorkerError(
                f'randomisation ({", ".join(randomize)}) needs a simulated station; the '
                f'{self.station.backend} backend drives a real world'
            )
        try:
            new_task = make_task(task, self.conventions)
        except KeyError as exc:
            raise WorkerError(str(exc.args[0])) from None
        # The layout's reach is checked at the table's height in this episode.
        feasibility = self.feasibility.moved(table_offset(seed, randomize))
        try:
            objects = new_task.scene(layout, seed, feasibility)
            # the distractors' view check at the nominal table: clutter then draws the same
            # whether table_height is on or off
            variation = vary(
                new_task, objects, seed, randomize, tuple(self.emb.cameras), self.feasibility
            )
        except ValueError as exc:
            raise WorkerError(str(exc)) from None
        # A real world (ros2_control) has its own objects: nothing to build, arms to bring home.
        with _answering():
            if self.station.simulated:
                self.station.load([*objects, *variation.clutter], variation)
            else:
                self.station.load([])
        self.variation = variation
        self.task = new_task
        self._picture = self._cut_picture(new_task.picture) if new_task.picture else None
        self.step = 0
        self.succeeded = False
        self.shield.reset()
        self._token = secrets.token_hex(16)
        description = new_task.description
        if not self.station.simulated:
            with _answering():
                description += self._go_home()
        return ResetResult(variation.instruction, description, self.state(), self._token, variation)

    def _go_home(self, max_step: float = 0.04) -> str:
        """Bring both arms to joints 0 through the shield, a small step a tick; says what it
        did (a real robot is not reset by rebuilding a scene)."""
        start = self.station.measured()
        joints = [i for k in (0, 7) for i in range(k, k + 6)]
        far = float(np.abs(start[joints]).max())
        if far < 0.05:
            return ''
        ticks = int(np.ceil(far / max_step))
        for k in range(1, ticks + 1):
            command = start.copy()
            command[joints] = start[joints] * (1.0 - k / ticks)
            verdict = self.shield.check(command, self.station.measured())
            if not verdict.accepted:
                raise WorkerError(f'reset cannot bring the arms home: {verdict.messages()}')
            self.station.apply(command)
        return f' (the arms were {far:.2f} rad from home and were brought home first)'

    def _require_episode(self) -> Task:
        if self.task is None:
            raise WorkerError('no episode: call reset first')
        return self.task

    @property
    def episode_ended(self) -> bool:
        """The step limit was reached, or the task succeeded (the bench's rule, unless the
        task is judged after the wrap-up or `end_on_success` is off)."""
        return self.task is not None and (self.step >= self.task.step_limit or self.succeeded)

    def _end_reason(self) -> str:
        if self.succeeded:
            return TASK_SUCCEEDED
        return f'episode ended: the step limit of {self.task.step_limit} ticks was reached'

    def tick(self, command: object) -> TickResult:
        """Check `command` with the shield; if accepted, advance the simulator one tick."""
        task = self._require_episode()
        if self.episode_ended:
            return TickResult(False, [self._end_reason()], self.state(), True)
        verdict = self.shield.check(command, self.station.measured())
        if not verdict.accepted:
            arms = tuple(dict.fromkeys(r.arm for r in verdict.reasons if r.arm))
            return TickResult(False, verdict.messages(), self.state(), False, arms)
        with _answering():
            self.station.apply(np.asarray(command, dtype=float))
        self.step += 1
        if self.end_on_success and not task.judged_after_wrap_up and self.station.simulated:
            self.succeeded = task.check(self.station.snapshot(self.step)).success
        ended = self.episode_ended
        return TickResult(True, [self._end_reason()] if ended else [], self.state(), ended)

    def state(self) -> RobotState:
        self._require_episode()
        return self.station.state(self.step)

    def measured(self) -> np.ndarray:
        self._require_episode()
        return self.station.measured()

    def outcome(self, token: str, end: bool = False) -> Outcome:
        """The task's verdict on the current state; only with the episode's token. `end`: the
        episode's last read, which releases the token (the next reset needs none: a station
        that serves driver after driver). A station that is not simulated has no simulator to
        judge it, and says so."""
        task = self._require_episode()
        if self._token is None or not secrets.compare_digest(token, self._token):
            raise WorkerError('outcome refused: wrong or missing token')
        if end:
            self._token = None
        if not self.station.simulated:
            return Outcome(
                False,
                0.0,
                f'no outcome: the {self.station.backend} backend drives a robot whose success '
                'no simulator judges',
            )
        return task.check(self.station.snapshot(self.step))

    @property
    def time(self) -> float:
        return self.station.time

    def profile(self) -> Profile:
        r = self.emb.rates
        simulated = self.station.simulated
        return Profile(
            'robot',
            self.emb.robot,
            self.emb.command_layout,
            r.control_hz,
            r.physics_hz if simulated else 0.0,
            r.physics_steps_per_tick if simulated else 0,
            self.station.backend,
        )

    def observe(
        self, cameras: list[str], depth: bool = True, segmentation: bool = True
    ) -> list[CameraView]:
        self._require_episode()
        if PICTURE in cameras and self._picture is None:
            raise ValueError(f'this task shows no picture ({PICTURE})')
        with _answering():
            return [
                self._picture if c == PICTURE else self.station.render(c, depth, segmentation)
                for c in cameras
            ]

    def _cut_picture(self, name: str, scale: int = 3, margin: int = 6) -> CameraView:
        """The task's picture: the object `name` as the head camera sees it at the reset,
        alone on a plain background, enlarged `scale` times."""
        if not self.station.simulated:
            raise WorkerError('a task picture needs the simulator (it is cut out of a render)')
        with _answering():
            view = self.station.render('cam_head', True, True)
        index = [o.name for o in self.station.objects].index(name)
        mask = view.segmentation == index
        rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
        if not len(rows):
            raise WorkerError(f'the head camera does not see {name}: no picture of it')
        r0, r1 = max(0, rows[0] - margin), min(mask.shape[0], rows[-1] + margin + 1)
        c0, c1 = max(0, cols[0] - margin), min(mask.shape[1], cols[-1] + margin + 1)
        rgb = np.where(mask[..., None], view.rgb, PICTURE_BACKGROUND).astype(np.uint8)[r0:r1, c0:c1]
        rgb = np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)
        depth = np.repeat(np.repeat(view.depth[r0:r1, c0:c1], scale, axis=0), scale, axis=1)
        return CameraView(
            PICTURE,
            rgb,
            view.fx * scale,
            view.fy * scale,
            (view.cx - c0) * scale,
            (view.cy - r0) * scale,
            view.position,
            view.rotation,
            depth,
            None,
            (),
            view.time,
        )

    def close(self) -> None:
        self.station.close()

    # Kinematics ---------------------------------------------------------------------------

    def _arm(self, arm: str):
        if arm not in ARMS:
            raise WorkerError(f"arm must be 'left' or 'right', got {arm!r}")
        return self.kinematics.arms[arm]

    def fk(self, arm: str, joints: np.ndarray) -> tuple[Pose, Pose]:
        joints = np.asarray(joints, dtype=float)
        if joints.shape != (6,) or not np.all(np.isfinite(joints)):
            raise WorkerError(
                f'fk needs 6 finite joint values, got {joints.shape[0] if joints.ndim else 0}'
            )
        return self._arm(arm).fk_both(joints)

    def ik(
        self,
        arm: str,
        position: np.ndarray,
        rotation: np.ndarray | None = None,
        seed: np.ndarray | None = None,
    ) -> IKResult:
        kin = self._arm(arm)
        if seed is None and self.task is not None:
            seed = self.measured()[arm_slice(arm)]
        return kin.ik(position, rotation, seed)

    def collides(self, arm: str, joints: np.ndarray) -> bool:
        """Would `arm` at `joints` (the rest as now) touch the table, an object or the other
        arm? (Objects the arm holds do not count.)"""
        self._require_episode()
        self._arm(arm)
        return self.station.arm_collides(arm, np.asarray(joints, dtype=float))

    def plan(
        self,
        arm: str,
        goal: np.ndarray | None = None,
        position: np.ndarray | None = None,
        rotation: np.ndarray | None = None,
    ) -> PlanResult:
        """A collision-free joint path for `arm` from its measured joints to `goal` (joints) or
        to a TCP `position` (and `rotation`)."""
        self._require_episode()
        kin = self._arm(arm)
        start = self.measured()[arm_slice(arm)]
        if goal is None:
            if position is None:
                return PlanResult(False, [], 'plan needs a joint goal or a TCP position')
            solved = self.ik(arm, position, rotation, start)
            if not solved.ok:
                return PlanResult(False, [], solved.reason)
            goal = solved.joints
        goal = np.asarray(goal, dtype=float)
        if goal.shape != (6,) or not np.all(np.isfinite(goal)):
            return PlanResult(False, [], 'the joint goal must be 6 finite numbers')
        return plan_path(
            start,
            goal,
            kin.lower,
            kin.upper,
            lambda q: self.station.arm_collides(arm, q),
            seed=self.step,
        )
