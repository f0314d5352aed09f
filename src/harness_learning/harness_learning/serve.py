"""Serve a trained policy over the openpi websocket protocol (run in the learning extra's
environment by `harness policy serve`):

    python -m harness_learning.serve RUN --name NAME [--host H] [--port P]

RUN is a `harness policy train` folder. The metadata frame names the policy and the hash of its
weights, so a broker can tell that the server answering is the one it meant. Port 0 takes a
free port; the bound address is printed as `serving NAME at ws://HOST:PORT`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m harness_learning.serve', description=__doc__)
    parser.add_argument('run', help='a `harness policy train` folder')
    parser.add_argument('--name', required=True, help="the catalogue's name of the policy")
    parser.add_argument('--host', default='127.0.0.1')
    parser.add_argument('--port', type=int, default=0)
    args = parser.parse_args(argv)

    import torch
    from arx_x5_description.embodiment import load_embodiment
    from harness_expert.locating import Locator
    from harness_policy.server import PolicyServer
    from harness_worker.kinematics import StationKinematics

    from arx_x5_description.urdf import station_urdf
    from harness_learning.learned_policy import CheckpointError, LearnedModel, LearnedPolicy

    torch.set_num_threads(1)  # a chunk a second at most; the episode's processes need the cores
    try:
        model = LearnedModel(Path(args.run))
    except CheckpointError as exc:
        print(f'harness_learning.serve: {exc}', file=sys.stderr)
        return 2
    emb = load_embodiment()
    urdf = station_urdf()
    kinematics = StationKinematics(urdf, emb)
    record = model.record
    # A training stopped (or failed) before its steps serves its last checkpoint: said in the
    # kind, which the catalogue's listing and every episode's policy events show (the
    # adoption gate refuses such a folder).
    status = record.get('status')
    unfinished = (
        f', its training {status} at step {record.get("steps_done", "?")} of '
        f'{(record.get("plan") or {}).get("steps", "?")}'
        if status != 'done'
        else ''
    )
    metadata = {
        'name': args.name,
        'kind': f'learned: LeRobot {model.config.type} trained on '
        f'{record.get("demonstrations", "?")} demonstrations{unfinished}',
        'checkpoint_sha256': model.sha256,
        'action_space': 'joint_position',
        'action_hz': float(record.get('fps') or emb.rates.control_hz),
        'tasks': sorted(record.get('tasks') or {}),
    }
    server = PolicyServer(
        lambda: LearnedPolicy(model, Locator(emb, urdf, kinematics)), metadata, args.host, args.port
    )
    try:
        server.start()
    except OSError as exc:
        print(f'cannot listen at {args.host}:{args.port}: {exc.strerror or exc}', file=sys.stderr)
        return 2
    print(f'serving {args.name} at {server.url} ({metadata["kind"]})', flush=True)
    if ended := server.serve_forever():  # ('' on Ctrl-C or SIGTERM)
        print(ended, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
