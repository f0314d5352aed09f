"""A real tiny training with LeRobot (a few steps on a tiny dataset), resumed, then served over
the openpi protocol and asked for actions on a rendered station; bad checkpoints are one line.
Needs the learning extra (tools/test.sh installs it); skipped without it."""

import json
import os
import re
import shutil
import subprocess
from dataclasses import replace

import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from demos import demo
from harness_learning.training import CHECKPOINT, RECORD, TrainError, TrainPlan, train
from harness_policy.client import PolicyClient, PolicyError
from harness_policy.learning_env import learning_python
from harness_policy.observation import observation, reply_of
from harness_recording.lerobot import write_datasets
from harness_worker.worker import Worker

from arx_x5_description.urdf import station_urdf

PYTHON = learning_python()
pytestmark = pytest.mark.skipif(
    PYTHON is None, reason='the learning extra is not installed (tools/setup.sh --learning)'
)
os.environ.setdefault('MUJOCO_GL', 'egl')
INSTRUCTION = 'Pick up the red cube and hold it at least 10 cm above the table.'


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp('learned')
    trials = [demo(30, k) for k in range(3)]
    for t in trials:
        t.task = INSTRUCTION
    write_datasets(root / 'dataset', trials)
    lines = []
    plan = TrainPlan(
        root / 'dataset', root / 'run', steps=4, batch_size=4, log_every=2, save_every=4
    )
    record = train(plan, PYTHON, lines.append)
    return plan, record, lines


def test_lerobot_trains_and_a_stopped_run_resumes(trained):
    plan, record, lines = trained
    assert record['status'] == 'done' and record['steps_done'] == 4
    assert [s for s, _ in record['loss_curve']] == [2, 4]
    assert all(np.isfinite(v) for _, v in record['loss_curve'])
    assert any(re.match(r'step 4/4  loss [0-9.]+ .* min left', line) for line in lines)
    assert record['tasks'] == {INSTRUCTION: ['red cube']}
    assert record['observation'] == {'state': True, 'environment_state': True, 'cameras': []}
    pretrained = plan.out / CHECKPOINT
    for name in ('config.json', 'model.safetensors', 'train_config.json'):
        assert (pretrained / name).is_file(), name  # LeRobot's pretrained-model layout
    # A resumption asked with other options would be LeRobot's saved ones under a record of
    # these: refused. Only --steps may change.
    with pytest.raises(TrainError, match='batch_size 4, not 8'):
        train(replace(plan, steps=6, batch_size=8), PYTHON)
    # ... and `harness policy train` derives how often to save and log from --steps: those
    # are the saved run's, as LeRobot resumes with them
    more = train(replace(plan, steps=6, save_every=6, log_every=1), PYTHON)
    assert more['steps_done'] == 6 and [s for s, _ in more['loss_curve']] == [2, 4, 6]
    assert '--resume=true' in (plan.out / 'train.log').read_text() or more['status'] == 'done'


def _serve(run, name='tiny'):
    process = subprocess.Popen(
        [PYTHON, '-m', 'harness_learning.serve', str(run), '--name', name, '--port', '0'],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = ''
    for line in process.stdout:  # LeRobot says what it loads first
        if line.startswith('serving '):
            break
    return process, line


def test_the_trained_policy_is_served_and_acts_on_a_rendered_station(trained):
    plan, _, _ = trained
    process, line = _serve(plan.out)
    try:
        url = re.search(r'at (ws://\S+)', line)
        assert url, (line, process.stderr.read() if process.poll() is not None else '')
        client = PolicyClient(url.group(1), timeout_s=60)
        meta = client.metadata
        assert meta['name'] == 'tiny' and len(meta['checkpoint_sha256']) == 64
        assert meta['kind'].startswith('learned: LeRobot act')
        worker = Worker(load_embodiment(), station_urdf())
        r = worker.reset('lift_cube', 0, 0, token='')
        views = worker.observe(['cam_head', 'cam_left_wrist', 'cam_right_wrist'], True, False)
        answer = reply_of(client.infer(observation(r.state, views, INSTRUCTION)))
        assert answer.actions.shape == (25, 14) and np.isfinite(answer.actions).all()
        # A scene without what it learned to act on: the policy says so and is done (its own
        # failure, not its server's), holding the measured pose.
        r = worker.reset('place_in_bowl', 0, 0, token=r.token)
        views = worker.observe(['cam_head', 'cam_left_wrist', 'cam_right_wrist'], True, False)
        blind = PolicyClient(url.group(1), timeout_s=60)
        answer = reply_of(blind.infer(observation(r.state, views, INSTRUCTION)))
        blind.close()
        worker.close()
        assert answer.done and 'the cameras show no red cube' in answer.info
        assert answer.actions.shape == (1, 14)
        assert answer.actions[0] == pytest.approx(r.state.measured, abs=1e-6)
        client.close()
        # An instruction it never learned: the server says so and closes (the episode's
        # policy run then ends with that sentence).
        other = PolicyClient(url.group(1), timeout_s=60)
        with pytest.raises(PolicyError, match='did not learn the instruction'):
            other.infer(observation(r.state, views, 'Stack the blocks.'))
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_checkpoint_of_another_robot_is_one_line(trained, tmp_path):
    plan, _, _ = trained
    other = tmp_path / 'other'
    shutil.copytree(plan.out, other, symlinks=True)
    config = other / CHECKPOINT / 'config.json'
    data = json.loads(config.read_text())
    data['output_features']['action']['shape'] = [7]
    config.write_text(json.dumps(data))
    process, _ = _serve(other)
    assert process.wait(timeout=120) == 2
    assert 'actions are (7,) wide, the station takes 14' in process.stderr.read()
    (other / RECORD).unlink()
    process, _ = _serve(other)
    assert process.wait(timeout=120) == 2
    assert 'is not a trained policy' in process.stderr.read()


def test_weights_cut_short_are_one_line_and_exit_2(trained, tmp_path):
    """(A truncated model.safetensors had been SafetensorError's traceback.)"""
    import shutil

    plan, _, _ = trained
    copy = tmp_path / 'run'
    shutil.copytree(plan.out, copy, symlinks=True)
    weights = copy / CHECKPOINT / 'model.safetensors'
    weights.unlink()  # (a link into the original's checkpoints: not written through)
    weights.write_bytes((plan.out / CHECKPOINT / 'model.safetensors').read_bytes()[:1000])
    done = subprocess.run(
        [PYTHON, '-m', 'harness_learning.serve', str(copy), '--name', 'cut', '--port', '0'],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert 'the checkpoint does not load' in done.stderr and 'Traceback' not in done.stderr


HISTORY_CHECK = """
import json, threading
import numpy as np, torch
from harness_learning.learned_policy import LearnedModel

class Stateful:  # as LeRobot's diffusion policy: select_action keeps history in _queues
    def __init__(self):
        self.reset()
    def reset(self):
        self._queues = {'seen': []}
    def select_action(self, batch):
        self._queues['seen'].append(float(batch['x'][0, 0]))
        return torch.full((1, 14), float(len(self._queues['seen'])))

class Config:
    n_action_steps = 1

model = LearnedModel.__new__(LearnedModel)  # (no checkpoint: the history's handling alone)
model.torch, model.policy, model.config = torch, Stateful(), Config()
model.pre = model.post = lambda batch: batch
model._history = threading.Lock()
_, a = model.chunk({'x': np.array([1.0])}, 'p', None)
_, b = model.chunk({'x': np.array([2.0])}, 'p', None)  # another connection's run begins
rows, a = model.chunk({'x': np.array([3.0])}, 'p', a)
print(json.dumps([a['seen'], b['seen'], float(rows[0, 0])]))
"""


def test_each_run_of_a_policy_with_observation_history_keeps_its_own():
    """A diffusion policy's observation history lived in the one policy object every
    connection shares: a new connection emptied another run's, and two runs mixed theirs."""
    out = subprocess.run([PYTHON, '-c', HISTORY_CHECK], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    a, b, steps_seen_by_a = json.loads(out.stdout.strip().splitlines()[-1])
    assert a == [1.0, 3.0] and b == [2.0] and steps_seen_by_a == 2.0
