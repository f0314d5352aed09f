"""A policy's chunks as one action per control tick: what run_policy's motion and the world
model's stand-in both stream (one place for the rate, the counting and the checks).

Each action of a chunk is held `control_hz / action_hz` ticks (a whole number: a rate that does
not divide the control rate is refused). When the chunk in hand is spent and the policy has not
said it is done, the next observation is sent. An answer out of protocol is an ObservationError
naming the policy and its endpoint; the connection's own errors (PolicyError) pass through.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from harness_types.execution import SKILL_ERROR, Execution

from harness_policy.observation import ObservationError, reply_of

# How a policy run's SKILL_ERROR starts when the policy's server, not the task, failed (it could
# not be reached, is another server than the catalogue's, or answered out of protocol): the
# episode is then not run (`policy_service_failed`), never a task failure in the tables.
SERVICE_FAILED = 'the policy service failed'


def failed_service(executions: Iterable[Execution]) -> str:
    """The detail of the last of `executions` that a policy server's failure ended ('' for
    none): its episode is not run."""
    failed = [e.detail for e in executions if e.event == SKILL_ERROR]
    return next((d for d in reversed(failed) if d.startswith(SERVICE_FAILED)), '')


def service_failure(problem: str) -> str:
    return f'{SERVICE_FAILED}: {problem}'


class Connection(Protocol):
    """A connected policy (harness_policy.client.PolicyClient)."""

    def infer(self, obs: dict) -> dict: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class PolicyRun:
    """One run of a policy (run_policy, or the world model rolling it forward): which server,
    what it is sent, how long a chunk may take, and when run_policy stops it."""

    name: str
    endpoint: str
    instruction: str
    action_hz: float
    cameras: tuple[str, ...]
    depth: bool
    timeout_s: float  # the longest wait for one chunk
    stall_seconds: float = 0.0  # run_policy: arms still this long once they moved ends it
    to_end: bool = False  # the driver's policy-to-end: no stall stop
    # (harness key, server key): a stock server's names for the observation's keys
    observation_keys: tuple[tuple[str, str], ...] = ()


def metadata_problem(metadata: object, run: PolicyRun) -> str:
    """What a server's metadata contradicts in the catalogue ('' when nothing): a server that
    says it acts at another rate than the catalogue's would be streamed at the wrong speed."""
    if not isinstance(metadata, dict) or 'action_hz' not in metadata:
        return ''  # openpi servers need not say
    said = metadata['action_hz']
    if isinstance(said, bool) or not isinstance(said, int | float):
        return f'policy {run.name} at {run.endpoint} says its action_hz is {said!r}, not a number'
    if not abs(float(said) - run.action_hz) <= 1e-6:  # NaN differs from every rate
        return (
            f'policy {run.name} at {run.endpoint} acts at {float(said):g} Hz, but the '
            f'catalogue says {run.action_hz:g} Hz'
        )
    return ''


def renamed(obs: dict, keys: tuple[tuple[str, str], ...]) -> dict:
    """The observation with its keys in a stock server's names (openpi's examples map them
    per robot: `observation/images/cam_head` -> `observation/image`, ...); keys not named stay."""
    if not keys:
        return obs
    names = dict(keys)
    return {names.get(k, k): v for k, v in obs.items()}


def hold_ticks(action_hz: float, control_hz: float, name: str = 'the policy') -> int:
    """Ticks each action is held; ValueError unless the rate divides the control rate."""
    ratio = control_hz / action_hz if action_hz > 0 else 0.0
    if round(ratio) < 1 or abs(ratio - round(ratio)) > 1e-6:
        raise ValueError(
            f'{name} acts at {action_hz:g} Hz; the control rate {control_hz:g} Hz must be a '
            'whole multiple of it'
        )
    return int(round(ratio))


class ChunkStream:
    """`next(observe)` -> this tick's 14 targets, or None once the policy said it is done and
    its last chunk ran. `observe()` makes the observation to send (called only when a chunk is
    due). `chunks` and `actions` count what was received and what began to run."""

    def __init__(
        self,
        connection: Connection,
        hold: int,
        name: str = 'the policy',
        endpoint: str = '',
        keys: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.connection = connection
        self.hold = hold
        self.keys = keys  # the server's names for the observation's keys
        self.who = f'policy {name}' + (f' at {endpoint}' if endpoint else '')
        self.rows: deque[np.ndarray] = deque()
        self.current: np.ndarray | None = None
        self.held = 0
        self.chunks = 0
        self.actions = 0
        self.done = False
        self.info = ''

    def pending(self) -> bool:
        """An action is still to be held or started."""
        return bool(self.rows) or (self.current is not None and self.held < self.hold)

    def next(self, observe: Callable[[], dict]) -> np.ndarray | None:
        if not self.pending():
            if self.done:
                return None
            try:
                reply = reply_of(self.connection.infer(renamed(observe(), self.keys)))
            except ObservationError as exc:
                raise ObservationError(f'{self.who} answered out of protocol: {exc}') from None
            self.chunks += 1
            self.done, self.info = reply.done, reply.info or self.info
            self.rows.extend(reply.actions)
        if self.current is None or self.held >= self.hold:
            self.current, self.held = self.rows.popleft(), 0
            self.actions += 1
        self.held += 1
        return self.current
