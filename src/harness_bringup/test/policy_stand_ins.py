"""Policies for tests, served over the real protocol (harness_policy.server) in the test's
process. They act from the observation they are sent, like any policy: the measured state."""

from __future__ import annotations

import numpy as np
from harness_policy.observation import joints_of, reply
from harness_policy.server import PolicyServer

CHUNK = 5


class ReachPolicy:
    """Moves the left arm's first joint to `target` at 0.02 rad per action, then either says
    done (`done=True`) or holds still forever (a stall: openpi servers never say done).
    `bad_after` chunks in, it answers out of protocol; `jump` sends one action far away (the
    shield rejects it)."""

    def __init__(self, target=0.3, done=True, bad_after=None, jump=False):
        self.target, self.done, self.bad_after, self.jump = target, done, bad_after, jump
        self.chunks = 0

    def infer(self, obs: dict) -> dict:
        self.chunks += 1
        if self.bad_after is not None and self.chunks > self.bad_after:
            return {'actions': np.zeros((3, 5))}
        q = joints_of(obs)
        rows = []
        for _ in range(CHUNK):
            q = q.copy()
            step = np.clip(self.target - q[0], -0.02, 0.02)
            q[0] += 1.0 if self.jump else step
            rows.append(q)
        arrived = abs(self.target - rows[-1][0]) < 1e-3
        return reply(np.array(rows), done=self.done and arrived, info='joint 1 reached')


def serve(policy_factory, metadata=None) -> PolicyServer:
    server = PolicyServer(policy_factory, metadata or {'name': 'test_policy'})
    server.start()
    return server


def catalog(path, endpoint, learned=('lift', 'stack'), finishes=('lift',), stall=1.0) -> str:
    """A catalogue file with one external policy `reach` at `endpoint`."""
    path.write_text(
        'policies:\n'
        '  reach:\n'
        '    description: A test policy that turns the left arm a little.\n'
        f'    endpoint: {endpoint}\n'
        '    cameras: [cam_head]\n'
        '    depth: false\n'
        f'    learned: [{", ".join(learned)}]\n'
        f'    finishes: [{", ".join(finishes)}]\n'
        f'    stall_seconds: {stall}\n'
        '    timeout_seconds: 5.0\n'
    )
    return str(path)


def expert_catalogue(folder, port: int | None = None, finishes: list[str] | None = None):
    """The shipped catalogue's scripted_expert entry alone (the trained entries' checkpoints are
    relative to the shipped file), at `port` (default: its own, 0 = chosen at start), with other
    `finishes` if given; the file's path."""
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[3]
    shipped = yaml.safe_load((root / 'config' / 'policies.yaml').read_text())['policies']
    entry = dict(shipped['scripted_expert'])
    if port is not None:
        entry['endpoint'] = f'ws://127.0.0.1:{port}'
    if finishes is not None:
        entry['finishes'] = finishes
    path = Path(folder) / 'policies.yaml'
    path.write_text(yaml.safe_dump({'policies': {'scripted_expert': entry}}))
    return path
