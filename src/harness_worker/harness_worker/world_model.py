"""The world model behind `predict_future`, and its stand-in.

A world(-action) model answers: given the station now and an action sequence or a policy,
what will the robot and the scene look like after a horizon? The seam is the worker's
`worker/predict` service (harness_msgs/srv/Predict): predicted states per tick and the views of
the predicted end state; `locate` runs on those views like on real ones.

The stand-in here, `SimulatedFuture`, is not a learned model: it copies the simulated station
(MuJoCo's state, latched buttons, the shield's memory), rolls the copy forward tick by tick
through the same shield and physics, and puts the live station back exactly as it was. With a
policy it asks the policy server for chunks with observations rendered from the copy.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable

import numpy as np
from harness_policy.observation import ObservationError, observation
from harness_policy.stream import ChunkStream, PolicyRun, hold_ticks, metadata_problem
from harness_types.prediction import MAX_HORIZON_S, Prediction

MODEL_NAME = (
    'simulated_copy: a stand-in world model (a copy of the simulated station rolled forward, '
    'not a learned model)'
)


# The worker is busy while it predicts: a rollout (a slow policy server's) stops after this
# much wall time, well inside the skill server's wait for worker/predict, and says so.
MAX_ROLLOUT_WALL_S = 20.0


class WorldModelError(RuntimeError):
    """The world model cannot predict (no simulator to copy, a bad request)."""


class SimulatedFuture:
    """The stand-in: rolls a copy of `worker`'s simulated station. `connect(endpoint,
    timeout_s)` opens a policy connection (harness_policy.client.PolicyClient)."""

    model = MODEL_NAME

    def __init__(self, worker, connect: Callable | None = None) -> None:
        self.worker = worker
        self.connect = connect

    def predict(
        self,
        horizon_s: float,
        actions: np.ndarray | None = None,
        policy: PolicyRun | None = None,
        cameras: tuple[str, ...] = (),
    ) -> Prediction:
        worker, station = self.worker, self.worker.station
        if not hasattr(station, 'rollout'):
            raise WorldModelError(
                f'the {station.backend} backend has no simulator to copy: no world model'
            )
        if (actions is None) == (policy is None):
            raise WorldModelError('predict needs either actions or a policy')
        if not (np.isfinite(horizon_s) and 0 < horizon_s <= MAX_HORIZON_S):
            raise WorldModelError(
                f'the horizon must be in (0, {MAX_HORIZON_S:g}] s, got {horizon_s}'
            )
        hz = worker.emb.rates.control_hz
        ticks = int(round(horizon_s * hz))
        stopped = ''
        if actions is not None:
            actions = np.asarray(actions, dtype=float)
            if actions.ndim != 2 or actions.shape[1] != 14 or not np.all(np.isfinite(actions)):
                raise WorldModelError(f'actions must be N x 14 finite numbers, got {actions.shape}')
            if len(actions) < ticks:
                stopped = f'the actions ran out after {len(actions)} ticks'
                ticks = len(actions)
        worker._require_episode()
        shield = copy.copy(worker.shield)  # its memory (the last command) is the copy's own
        times, states = [], []
        with station.rollout(), contextlib.ExitStack() as stack:
            give_up = time.monotonic() + MAX_ROLLOUT_WALL_S
            if actions is not None:
                rows = iter(actions)
            else:
                rows = _PolicyRows(self, policy, hz, give_up)
                stack.callback(rows.close)
            out_of_time = f'the prediction ran out of time ({MAX_ROLLOUT_WALL_S:g} s of wall time)'
            for _ in range(ticks):
                if time.monotonic() > give_up:
                    stopped = out_of_time
                    break
                try:
                    command = next(rows)
                except StopIteration:
                    stopped = 'the policy said it is done'
                    break
                except (RuntimeError, OSError, ObservationError) as exc:
                    # (a request cut short at the limit is the limit's, not the policy's)
                    late = time.monotonic() >= give_up
                    stopped = out_of_time if late else f'the policy failed: {exc}'
                    break
                verdict = shield.check(command, station.measured())
                if not verdict.accepted:
                    stopped = f'the shield would reject: {"; ".join(verdict.messages())}'
                    break
                station.apply(command)
                times.append(station.time)
                states.append(station.measured())
            views = [station.render(c, True, True) for c in cameras]  # locate() reads them
        return Prediction(
            self.model,
            np.array(times),
            np.array(states).reshape(-1, 14),
            views,
            stopped,
        )


class _PolicyRows:
    """A policy's actions, one per tick, with observations from the rolled-out copy."""

    def __init__(
        self, model: SimulatedFuture, policy: PolicyRun, control_hz: float, give_up: float
    ) -> None:
        if model.connect is None:
            raise WorldModelError('this world model has no policy client')
        if not policy.timeout_s > 0:
            raise WorldModelError(f'the policy timeout must be > 0 s, got {policy.timeout_s}')
        try:
            hold = hold_ticks(policy.action_hz, control_hz, f'policy {policy.name}')
        except ValueError as exc:
            raise WorldModelError(str(exc)) from None
        self.station = model.worker.station
        self.policy = policy
        self.step = model.worker.step
        self.give_up = give_up  # (time.monotonic's: the rollout's wall-time limit)
        connection = model.connect(policy.endpoint, policy.timeout_s)
        self.stream = ChunkStream(
            connection, hold, policy.name, policy.endpoint, policy.observation_keys
        )
        problem = metadata_problem(getattr(connection, 'metadata', None), policy)
        if problem:
            connection.close()
            raise WorldModelError(problem)

    def __iter__(self):
        return self

    def __next__(self) -> np.ndarray:
        # A request waits no longer than the rollout may still run (a 60 s server timeout held
        # the worker 35 s past a 20 s limit); the client reads its timeout at each request.
        left = self.give_up - time.monotonic()
        if hasattr(self.stream.connection, 'timeout_s'):
            self.stream.connection.timeout_s = max(0.001, min(self.policy.timeout_s, left))
        row = self.stream.next(self._observation)
        if row is None:
            raise StopIteration
        self.step += 1
        return row

    def _observation(self) -> dict:
        state = self.station.state(self.step)
        views = [self.station.render(c, self.policy.depth, False) for c in self.policy.cameras]
        return observation(state, views, self.policy.instruction)

    def close(self) -> None:
        self.stream.connection.close()
