"""The ros2_control worker backend against the MuJoCo stand-in of the ros2_control side (its
own process): the reference programs of lift_cube and place_in_bowl succeed through it, and
a shield rejection reaches the program as with the MuJoCo backend."""

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from harness_bench.reference import reference_path
from harness_bringup.processes import child_environment
from harness_bringup.station_graph import StationGraph
from harness_types.config import GraphConfig
from harness_types.wait import wait_future

from harness_msgs.srv import Outcome
from harness_types import names

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / 'harness_kernel' / 'test'))
from conftest import KernelSession

os.environ.setdefault('MUJOCO_GL', 'egl')


def ros2_control_params(root: Path) -> Path:
    config = GraphConfig()
    worker = replace(config.worker, backend='ros2_control', use_sim_time=True)
    return replace(config, worker=worker).write(root / 'params.yaml')


@pytest.fixture
def episode(tmp_path):
    """An episode of `task` on the ros2_control backend: (run a program, the outcome)."""
    sessions = []

    def start(task, layout=0):
        graph = StationGraph('driver_stand_in', ros2_control_params(tmp_path)).__enter__()
        standin = subprocess.Popen(
            [
                sys.executable,
                '-m',
                'harness_worker.ros2_control_standin_node',
                '--ros-args',
                '-p',
                f'task:={task}',
                '-p',
                f'layout:={layout}',
            ],
            env=child_environment(graph.domain_id),
        )
        sessions.append((graph, standin))
        r = graph.reset(task, layout)
        assert r.success, r.message
        kernel = KernelSession(graph, tmp_path / f'{task}-ws', tmp_path / f'{task}.log')
        sessions[-1] += (kernel,)
        outcome = graph.client.create_client(Outcome, f'{names.STANDIN}/outcome')
        assert outcome.wait_for_service(timeout_sec=10)

        def judge():
            return wait_future(outcome.call_async(Outcome.Request()), 30)

        return graph, kernel.run, judge

    yield start
    for graph, standin, *kernel in sessions:
        for k in kernel:
            k.stop()
        standin.terminate()
        standin.wait(timeout=10)
        graph.__exit__()


@pytest.mark.parametrize('task', ['lift_cube', 'place_in_bowl'])
def test_the_reference_program_through_ros2_control(episode, task):
    graph, run, judge = episode(task)
    assert graph.worker.worker.profile().backend == 'ros2_control'
    cell = run(reference_path(task).read_text())
    assert cell.status == 'finished', (
        cell.output,
        cell.traceback,
        getattr(cell.stopped_by, 'reasons', None),
    )
    result = judge()
    assert result.success, result.detail
    # The worker has no simulator to judge: it says so instead of inventing an outcome.
    mine = wait_future(
        graph.client.create_client(Outcome, names.worker_service('outcome')).call_async(
            Outcome.Request(token=graph.token)
        ),
        30,
    )
    assert mine.accepted and not mine.success and 'no outcome' in mine.detail


def test_a_shield_rejection_reaches_the_program_as_with_mujoco(episode, tmp_path):
    code = 'move_joints([0, 0, 0, 0, 0, 9.0], arm="left")'
    _, run, _ = episode('lift_cube')
    through_ros2_control = run(code)
    with StationGraph('driver_stand_in') as graph:
        graph.reset('lift_cube')
        kernel = KernelSession(graph, tmp_path / 'mujoco-ws', tmp_path / 'mujoco.log')
        try:
            through_mujoco = kernel.run(code)
        finally:
            kernel.stop()
    for cell in (through_ros2_control, through_mujoco):
        assert cell.status == 'escalated' and cell.stopped_by.event == 'SHIELD_REJECTED'
    assert through_ros2_control.stopped_by.reasons == through_mujoco.stopped_by.reasons
