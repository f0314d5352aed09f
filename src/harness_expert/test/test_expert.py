"""The scripted expert as a policy on the in-process worker: the bench tasks it learned succeed
with every row through the shield, it gives up at once on an instruction it does not
understand, it answers the same observations with the same actions, and what is not a normal
end (an observation out of protocol, a fault of its script) raises from `infer`.

The tests read the simulator (the outcome); the expert sees only observations."""

import os

import numpy as np
import pytest

os.environ.setdefault('MUJOCO_GL', 'egl')

from arx_x5_description.embodiment import load_embodiment
from harness_expert.expert import ScriptedExpert
from harness_expert.scripts import TaskScript
from harness_policy.observation import (
    PROMPT,
    STATE,
    ObservationError,
    depth_key,
    intrinsics_key,
    observation,
    reply_of,
)
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
        ('stack_blocks_three', 0, 0),
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
    # It cannot read the dots: it lifts the first white cube it sees, and says so. (At this
    # layout that is not the cube with 3 dots, so the episode does not end early on success.)
    assert r.done, f'no done after {r.ticks} ticks (episode ended: {r.episode_ended})'
    assert r.info.startswith('holding the white cube with the'), r.info
    assert 'I cannot read "3 dots": I picked the first white cube I saw' in r.info


def test_an_instruction_it_does_not_understand_is_done_at_once(worker, expert):
    r = worker.reset('lift_cube', 0, 0, token=worker._token or '')
    expert.reset()
    views = worker.observe(CAMERAS, True, False)
    obs = observation(r.state, views, 'Fold the towel neatly.')
    answer = reply_of(expert.infer(obs))
    assert answer.done and 'do not understand' in answer.info
    assert answer.actions.shape == (expert.chunk, 14)
    assert np.allclose(answer.actions, r.state.measured, atol=1e-6)  # it holds the start pose
    assert worker.tick(answer.actions[0]).accepted
    # Asked again, it is still done, with the same sentence and the same hold.
    again = reply_of(expert.infer(obs))
    assert again.done and again.info == answer.info
    assert np.array_equal(again.actions, answer.actions)


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


@pytest.fixture()
def first_obs(worker, expert):
    """The first observation of lift_cube layout 0 (the expert reset)."""
    r = worker.reset('lift_cube', 0, 0, token=worker._token or '')
    expert.reset()
    yield observation(r.state, worker.observe(CAMERAS, True, False), r.instruction)
    expert.reset()


def test_a_nan_state_raises_observation_error(expert, first_obs):
    bad = first_obs[STATE].copy()
    bad[3] = np.nan
    with pytest.raises(ObservationError, match='non-finite'):
        expert.infer({**first_obs, STATE: bad})
    # Also in the middle of a run: the caller hears of it on the observation it sent.
    assert not expert.infer(first_obs)['done']
    with pytest.raises(ObservationError, match='non-finite'):
        expert.infer({**first_obs, STATE: bad})


@pytest.mark.parametrize('text', ['nan', 'inf', '0.1'])
def test_a_state_of_strings_raises_observation_error(expert, first_obs, text):
    # (strings became numbers on conversion, 'nan' too: the reply's actions were NaN)
    with pytest.raises(ObservationError, match='must hold real numbers'):
        expert.infer({**first_obs, STATE: np.array([text] * 14)})


def test_depth_of_the_wrong_shape_raises_observation_error(expert, first_obs):
    key = depth_key(CAMERAS[0])
    with pytest.raises(ObservationError, match='shape'):
        expert.infer({**first_obs, key: first_obs[key][:-1]})


def test_a_first_observation_without_a_prompt_raises_observation_error(expert, first_obs):
    obs = {k: v for k, v in first_obs.items() if k != PROMPT}
    with pytest.raises(ObservationError, match='prompt'):
        expert.infer(obs)
    with pytest.raises(ObservationError, match='prompt'):
        expert.infer({**first_obs, PROMPT: b'Lift the red cube'})


def test_calibration_that_makes_no_sense_is_given_up_on(expert, first_obs):
    k = first_obs[intrinsics_key(CAMERAS[0])].copy()
    k[0, 0] = -k[0, 0]
    answer = reply_of(expert.infer({**first_obs, intrinsics_key(CAMERAS[0]): k}))
    assert answer.done and answer.info.startswith('I gave up: the calibration of cam_head')


def test_too_many_cameras_are_given_up_on(expert, first_obs):
    extra = {}
    for n in range(6):
        for key, value in first_obs.items():
            if key.endswith('/cam_left_wrist'):
                extra[key.replace('cam_left_wrist', f'cam_extra_{n}')] = value
    answer = reply_of(expert.infer({**first_obs, **extra}))
    assert answer.done and 'at most 6 cameras' in answer.info


def test_a_fault_of_the_script_raises_runtime_error(expert, first_obs, monkeypatch):
    def broken(self):
        return {}['no such key']

    monkeypatch.setattr(TaskScript, 'lift', broken)
    with pytest.raises(RuntimeError, match="scripted expert failed: KeyError: 'no such key'") as e:
        expert.infer(first_obs)
    assert isinstance(e.value.__cause__, KeyError)
    with pytest.raises(RuntimeError):  # not a normal end on a later call either
        expert.infer(first_obs)
