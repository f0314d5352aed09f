"""Serve `reactive_step` from a program stage (the kernel's side of the reactive callback)."""

from __future__ import annotations

import numpy as np
from harness_reactive.observation import ARMS, ArmObservation, Observation
from harness_reactive.stage import ProgramStage, ReactiveResult
from rclpy.node import Node

from harness_msgs.srv import ReactiveStep


def observation_of_request(request: ReactiveStep.Request) -> Observation:
    arms = {}
    for a in ARMS:
        s = getattr(request.state, a)
        q = s.tcp.orientation
        arms[a] = ArmObservation(
            np.array(s.joints),
            float(s.gripper),
            np.array([s.tcp.position.x, s.tcp.position.y, s.tcp.position.z]),
            np.array([q.w, q.x, q.y, q.z]),
            np.array([s.link6.position.x, s.link6.position.y, s.link6.position.z]),
            float(s.grip_force),
        )
    return Observation(
        int(request.step), float(request.time), arms, {v.name: v for v in request.views}
    )


def serve_reactive_step(
    node: Node, stage: ProgramStage, name: str = '/kernel/reactive_step', run=None
):
    """A `reactive_step` service answering from `stage`; `run(fn)` executes the stage's code on
    the thread that owns program code (default: the service callback's thread)."""

    def handle(request: ReactiveStep.Request, response: ReactiveStep.Response):
        obs = observation_of_request(request)
        try:
            result = run(lambda: stage.step(obs)) if run else stage.step(obs)
        except Exception as exc:
            result = ReactiveResult(fault=f'the reactive stage failed: {type(exc).__name__}: {exc}')
        response.fault = bool(result.fault)
        response.fault_reason = result.fault
        response.guard_fired, response.guard_action = result.guard_fired, result.guard_action
        response.guard_detail = result.guard_detail
        response.until_satisfied = result.until_satisfied
        response.target_keys = list(result.targets)
        response.target_lengths = [int(v.shape[0]) for v in result.targets.values()]
        response.target_values = [float(x) for v in result.targets.values() for x in v]
        return response

    return node.create_service(ReactiveStep, name, handle)
