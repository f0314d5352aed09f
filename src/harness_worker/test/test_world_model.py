"""The world model's stand-in (a copy of the simulated station rolled forward): the live station
is untouched, the prediction is what then happens, the shield and a policy apply as in a run."""

import threading

import numpy as np
import pytest
from arx_x5_description.embodiment import load_embodiment
from harness_policy.client import PolicyClient
from harness_policy.observation import joints_of, reply
from harness_policy.server import PolicyServer
from harness_policy.stream import PolicyRun
from harness_worker.worker import Worker
from harness_worker.world_model import SimulatedFuture, WorldModelError

from arx_x5_description.urdf import station_urdf


@pytest.fixture(scope='module')
def worker():
    w = Worker(load_embodiment(), station_urdf())
    yield w
    w.close()


def sweep(worker, n=50, to=0.5):
    actions = np.tile(worker.measured(), (n, 1))
    actions[:, 7] = np.linspace(0.0, to, n)  # the right arm's first joint
    return actions


def test_the_prediction_is_what_happens_and_the_station_is_untouched(worker):
    worker.reset('lift_cube', 0, 0, token=worker._token or '')
    before = worker.measured().copy()
    time, step = worker.time, worker.step
    cube = worker.station.object_pose('cube')[0].copy()
    model = SimulatedFuture(worker)
    actions = sweep(worker)
    p = model.predict(2.0, actions=actions, cameras=('cam_head',))
    assert 'stand-in' in p.model and p.stopped == ''
    assert p.states.shape == (50, 14) and len(p.views) == 1 and p.views[0].depth is not None
    assert np.array_equal(worker.measured(), before) and worker.time == time
    assert worker.step == step and np.array_equal(worker.station.object_pose('cube')[0], cube)
    for row in actions:
        assert worker.tick(row).accepted
    assert np.array_equal(worker.measured(), p.states[-1])
    assert worker.time == pytest.approx(p.times[-1])


def test_the_shield_stops_a_prediction_and_bad_requests_are_refused(worker):
    worker.reset('lift_cube', 0, 0, token=worker._token or '')
    actions = sweep(worker)
    actions[10:, 7] = 2.0  # a jump the shield rejects
    p = SimulatedFuture(worker).predict(2.0, actions=actions)
    assert len(p.states) == 10 and 'the shield would reject' in p.stopped
    with pytest.raises(WorldModelError, match='N x 14'):
        SimulatedFuture(worker).predict(1.0, actions=np.zeros((3, 5)))
    with pytest.raises(WorldModelError, match='horizon'):
        SimulatedFuture(worker).predict(0.0, actions=actions)
    with pytest.raises(WorldModelError, match='either actions or a policy'):
        SimulatedFuture(worker).predict(1.0)
    short = SimulatedFuture(worker).predict(4.0, actions=sweep(worker, n=20))
    assert len(short.states) == 20 and short.stopped == 'the actions ran out after 20 ticks'


class Turn:
    def infer(self, obs):
        q = joints_of(obs)
        rows = np.tile(q, (5, 1))
        rows[:, 7] = q[7] + 0.02 * np.arange(1, 6)
        return reply(rows, done=q[7] > 0.2)


def test_a_policy_is_rolled_forward_with_views_of_the_copy(worker):
    worker.reset('lift_cube', 0, 0, token=worker._token or '')
    before = worker.measured().copy()
    with PolicyServer(Turn, {'name': 'turn'}) as server:
        model = SimulatedFuture(worker, lambda url, t: PolicyClient(url, t, t))
        policy = PolicyRun('turn', server.url, 'turn', 25.0, ('cam_head',), False, 5.0)
        p = model.predict(10.0, policy=policy)
    assert p.stopped == 'the policy said it is done' and p.states[-1][7] > 0.2
    assert len(p.states) < 250 and np.array_equal(worker.measured(), before)


class Stalls:
    """Answers its first request, then waits (a slow server) until released."""

    release = threading.Event()

    def __init__(self) -> None:
        self.calls = 0

    def infer(self, obs):
        self.calls += 1
        if self.calls > 1:
            Stalls.release.wait(120)
        return reply(np.tile(joints_of(obs), (5, 1)))


def test_a_request_waits_no_longer_than_the_rollout_may_run(worker, monkeypatch):
    """A server slower than the rollout's wall-time limit held the worker for its whole
    request timeout (35 s past a 20 s limit), then was said to have run out of time."""
    import harness_worker.world_model as world_model

    monkeypatch.setattr(world_model, 'MAX_ROLLOUT_WALL_S', 1.0)
    worker.reset('lift_cube', 0, 0, token=worker._token or '')
    Stalls.release.clear()
    try:
        with PolicyServer(Stalls, {'name': 'stalls'}) as server:
            model = SimulatedFuture(worker, lambda url, t: PolicyClient(url, t, 10.0))
            policy = PolicyRun('stalls', server.url, 'stall', 25.0, ('cam_head',), False, 600.0)
            p = model.predict(10.0, policy=policy)
            Stalls.release.set()
    finally:
        Stalls.release.set()
    assert p.stopped == 'the prediction ran out of time (1 s of wall time)', p.stopped
    assert len(p.states) == 5  # the first chunk's
