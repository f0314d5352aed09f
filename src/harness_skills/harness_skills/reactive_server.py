"""Serve `reactive_step` from a program stage (the kernel's side of the reactive callback)."""

from __future__ import annotations

from harness_reactive.observation import Observation
from harness_reactive.stage import ProgramStage, ReactiveResult
from rclpy.node import Node

from harness_msgs.srv import ReactiveStep
from harness_skills.ros_port import observation_of


def observation_of_request(request: ReactiveStep.Request) -> Observation:
    return observation_of(request.state, {v.name: v for v in request.views})


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
