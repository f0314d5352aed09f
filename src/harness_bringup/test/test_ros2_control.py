"""The ros2_control worker backend against the MuJoCo stand-in of the ros2_control side (its
own process): the reference programs of lift_cube and place_in_bowl succeed through it, and
a shield rejection reaches the program as with the MuJoCo backend."""

import importlib.util
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from harness_bench.reference import reference_path
from harness_bringup.processes import child_environment
from harness_bringup.station_graph import StationGraph
from harness_types.config import load_config
from harness_types.wait import wait_future

from harness_msgs.srv import Outcome
from harness_types import names


def _kernel_test_support():
    """harness_kernel's test conftest (its KernelSession), loaded under a name of its own: as
    `conftest` it would be this package's."""
    path = Path(__file__).resolve().parents[2] / 'harness_kernel' / 'test' / 'conftest.py'
    spec = importlib.util.spec_from_file_location('harness_kernel_test_conftest', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KernelSession = _kernel_test_support().KernelSession

os.environ.setdefault('MUJOCO_GL', 'egl')


def ros2_control_params(root: Path) -> Path:
    config = load_config(Path(__file__).resolve().parents[3] / 'config' / 'harness.yaml')
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


def test_an_episode_attached_to_a_served_ros2_control_station(tmp_path, monkeypatch):
    """The command line on a station started outside the episode (as `ros2 launch` would):
    `harness serve` with the ros2_control backend, the stand-in behind it, and `harness run
    --attach` with the scripted baseline; the stand-in's world shows the cube lifted."""
    import json

    from harness_bringup.cli import main
    from harness_bringup.domain import claim_domain_id

    params = ros2_control_params(tmp_path)
    claim = claim_domain_id()
    env = child_environment(claim.domain_id)
    claim.release()  # harness serve claims its domain itself (one station a domain)
    processes = [
        subprocess.Popen(
            [sys.executable, '-m', 'harness_worker.ros2_control_standin_node'], env=env
        ),
        subprocess.Popen(
            [sys.executable, '-m', 'harness_bringup.cli', '--config', str(params), 'serve'],
            env=env,
        ),
    ]
    try:
        monkeypatch.setenv('ROS_DOMAIN_ID', str(claim.domain_id))
        code = main(
            ['--config', str(params), 'run', 'lift_cube', '--model', 'scripted', '--attach']
            + ['--out', str(tmp_path / 'runs')]
        )
        (folder,) = (tmp_path / 'runs').iterdir()
        summary = json.loads((folder / 'summary.json').read_text())
        assert code == 0 and summary['backend'] == 'ros2_control', summary
        # The worker has no simulator: the outcome says so; the stand-in's world is judged.
        assert not summary['outcome']['success'] and 'no outcome' in summary['outcome']['detail']
        with StationGraph('judge', attach=True) as graph:
            judge = graph.client.create_client(Outcome, f'{names.STANDIN}/outcome')
            assert judge.wait_for_service(timeout_sec=10)
            result = wait_future(judge.call_async(Outcome.Request()), 30)
        assert result.success, result.detail
        assert (folder / 'bag').is_dir() and 'bag_error' not in summary
    finally:
        for p in processes:
            p.terminate()
            p.wait(timeout=20)


def test_attach_without_a_station_says_how_to_start_one(tmp_path, monkeypatch, capsys):
    import json

    from harness_bringup.cli import main
    from harness_bringup.domain import claim_domain_id

    from harness_bringup import station_graph

    claim = claim_domain_id()  # a domain nobody serves
    try:
        monkeypatch.setenv('ROS_DOMAIN_ID', str(claim.domain_id))
        monkeypatch.setattr(station_graph, 'ATTACH_WAIT_S', 1.0)
        program = tmp_path / 'p.py'
        program.write_text('print(1)\n')
        code = main(['program', 'lift_cube', str(program), '--attach', '--out', str(tmp_path)])
    finally:
        claim.release()
    assert code == 1
    said = capsys.readouterr().err
    assert f'no station answers worker/reset in ROS domain {claim.domain_id}' in said
    assert 'ros2 launch harness_bringup' in said
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert json.loads((folder / 'summary.json').read_text())['status'] == 'error'
