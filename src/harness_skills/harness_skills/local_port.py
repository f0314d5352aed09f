"""A station port on an in-process worker core: for unit tests and benchmarks without ROS."""

from __future__ import annotations

import mujoco
import numpy as np
from harness_reactive.observation import ARMS, ArmObservation, Observation
from harness_reactive.stage import ProgramStage, ReactiveResult
from harness_worker.records import StateRecord
from harness_worker.worker import Worker

from harness_skills.port import Path, Solved, TickOutcome


def observation_of(state: StateRecord, images: dict | None = None) -> Observation:
    arms = {}
    for a in ARMS:
        r = state.arm(a)
        arms[a] = ArmObservation(
            r.joints, r.gripper, r.tcp_position, r.tcp_quat, r.link6_position, r.grip_force
        )
    return Observation(state.step, state.sim_time, arms, images or {})


def rotation_of(quat: np.ndarray | None) -> np.ndarray | None:
    if quat is None:
        return None
    m = np.zeros(9)
    mujoco.mju_quat2Mat(m, np.asarray(quat, dtype=float))
    return m.reshape(3, 3)


class LocalStationPort:
    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    def tick(self, command: np.ndarray) -> TickOutcome:
        r = self.worker.tick(command)
        return TickOutcome(r.accepted, r.reasons, observation_of(r.state), r.episode_ended)

    def observe_state(self) -> Observation:
        return observation_of(self.worker.state())

    def ik(self, arm, position, quat, seed) -> Solved:
        r = self.worker.ik(arm, position, rotation_of(quat), seed)
        return Solved(r.ok, r.joints, r.reason)

    def tcp_of(self, arm: str, joints: np.ndarray) -> np.ndarray:
        return self.worker.fk(arm, joints)[1].position

    def plan(self, arm: str, goal: np.ndarray) -> Path:
        r = self.worker.plan(arm, goal)
        return Path(r.ok, r.path, r.reason)

    def images(self, cameras: list[str]) -> dict[str, object]:
        return {v.name: v for v in self.worker.observe(cameras)}


class LocalReactivePort:
    """The program stage called directly (what the kernel's reactive_step does over ROS)."""

    def __init__(self, stage: ProgramStage) -> None:
        self.stage = stage

    def step(self, execution_id: str, skill: str, obs: Observation) -> ReactiveResult:
        return self.stage.step(obs)
