"""The scripted expert as a policy on the in-process worker: the bench tasks it learned succeed
with every row through the shield, it gives up at once on an instruction it does not
understand, and it answers the same observations with the same actions.

The tests read the simulator (the outcome); the expert sees only observations."""

import os

import numpy as np
import pytest

os.environ.setdefault('MUJOCO_GL', 'egl')

from arx_x5_description.embodiment import load_embodiment
from harness_expert.expert import ScriptedExpert
from harness_policy.observation import observation, reply_of
from harness_worker.worker import Worker
from rollout import CAMERAS, rollout

from arx_x5_description.urdf import station_urdf


@pytest.fixture(scope='module')
def emb():
    return load_embodiment()


@pytest.fixture(scope='module')
def urdf():
    return station_urdf()


@pytest.fixture(scope='module')
def worker(emb, urdf):
    w = Worker(emb, urdf)
    yield w
    w.close()


@pytest.fixture(scope='module')
def expert(emb, urdf):
    e = ScriptedExpert(emb, urdf)
    yield e
    e.close()


@pytest.mark.parametrize(
    'task, layout, seed',
    [
        ('lift_cube', 1, 0),
        ('stack_blocks_two', 2, 1),
        ('press_button', 1, 0),
        ('push_to_zone', 2, 0),
        ('handover_bar', 1, 1),
        ('place_in_bowl', 2, 0),
    ],
)
def test_a_learned_task_succeeds(worker, expert, task, layout, seed):
    r = rollout(worker, expert, task, layout, seed)
    assert not r.rejections, r.rejections
    assert r.success, f'{r.outcome.detail} (info: {r.info})'
    if worker.task.judged_after_wrap_up:
        assert r.done, 'a judged task needs the policy to say when it is over'


def test_pick_numbered_ends_with_done_whatever_it_picked(worker, expert):
    r = rollout(worker, expert, 'pick_numbered', 0, 0)
    assert not r.rejections, r.rejections
    # It cannot read the dots: it lifts the first white cube it sees, and says so.
    assert r.done or r.episode_ended
    if r.done:
        assert 'cannot read' in r.info


def test_an_instruction_it_does_not_understand_is_done_at_once(worker, expert):
    r = worker.reset('lift_cube', 0, 0, token=worker._token or '')
    expert.reset()
    views = worker.observe(CAMERAS, True, False)
    answer = reply_of(expert.infer(observation(r.state, views, 'Fold the towel neatly.')))
    assert answer.done and 'do not understand' in answer.info
    assert answer.actions.shape == (expert.chunk, 14)
    assert np.allclose(answer.actions, r.state.measured, atol=1e-6)  # it holds the start pose
    assert worker.tick(answer.actions[0]).accepted


def test_metadata_and_the_reply_format(worker, expert):
    assert expert.metadata['action_space'] == 'joint_position'
    assert expert.metadata['action_hz'] == 25.0
    r = worker.reset('press_button', 0, 0, token=worker._token or '')
    expert.reset()
    obs = observation(r.state, worker.observe(CAMERAS, True, False), r.instruction)
    answer = expert.infer(obs)
    assert answer['actions'].dtype == np.float32 and answer['actions'].shape == (10, 14)
    assert answer['done'] is False
    expert.reset()


def test_same_observations_same_actions(worker, emb, urdf):
    """Two experts fed the same observations answer the same chunks, row for row."""
    first, second = ScriptedExpert(emb, urdf), ScriptedExpert(emb, urdf)
    r = worker.reset('stack_blocks_two', 0, 0, token=worker._token or '')
    state = r.state
    for _ in range(12):
        obs = observation(state, worker.observe(CAMERAS, True, False), r.instruction)
        a, b = first.infer(obs), second.infer(obs)
        assert np.array_equal(a['actions'], b['actions']) and a['done'] == b['done']
        for row in a['actions']:
            t = worker.tick(row)
            assert t.accepted, t.reasons
            state = t.state
    first.close()
    second.close()
