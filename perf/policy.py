"""Milliseconds per policy request over the openpi protocol (websocket + msgpack), and actions
per second sustained through the shield by run_policy. Prints JSON.

1. The round trip of one chunk request with a realistic observation, median, p90 and max,
   against a server in this process (a thread) and in another process.
2. run_policy on a real station graph (worker with the shield, skill server), against a policy
   server in another process that streams a slow sweep of both arms: actions per second of
   wall time and the ratio to real time, without cameras (the protocol, the engine and the
   shield) and with the three cameras and depth a policy like the scripted expert is sent.

3. A trained policy (`--trained DIR`, default the catalogue's shipped `policies/act_lift_cube`,
   served by `python -m harness_learning.serve` in the learning extra's environment): the
   round trip of a chunk request with observations rendered on lift_cube, median per chunk and
   per action (a chunk is 25 actions, one second at 25 Hz; the first request, which also
   locates the object, reported apart). Target: under 40 ms per action. Skipped (said in the
   JSON) without the learning extra or the checkpoint.

The observation is what the harness sends: cam_head 480 x 640 colour and depth, two wrist
cameras 240 x 320 colour and depth, their calibration, the 14-number state, the time and the
prompt; the reply is a 10 x 14 float32 chunk. The policy answers at once, so the numbers are
the protocol's cost (encoding, the socket, decoding), not a model's.

    python perf/policy.py [--requests 200] [--seconds 8]
"""

import argparse
import json
import multiprocessing
import time
from pathlib import Path

import numpy as np
from _record import Target, add_save_argument, report
from harness_bringup.processes import use_wheels_ament_prefix
from harness_policy.client import PolicyClient
from harness_policy.protocol import Encoder, packb, unpackb
from harness_policy.server import PolicyServer

HORIZON = 10
WARMUP = 5


class Chunk:
    """Answers a 10 x 14 chunk around the sent state."""

    def infer(self, obs: dict) -> dict:
        state = np.asarray(obs['observation/state'], dtype=np.float32)
        return {'actions': np.tile(state, (HORIZON, 1)), 'done': False}


def observation(seed: int = 0) -> dict:
    """An observation of the harness's size (random pixels: nothing compresses them anyway)."""
    rng = np.random.default_rng(seed)
    obs: dict = {
        'observation/state': rng.uniform(-1, 1, 14).astype(np.float32),
        'observation/time': np.float64(12.5),
        'prompt': 'stack the three blocks, red on green on blue',
    }
    for camera, (h, w) in (
        ('cam_head', (480, 640)),
        ('cam_left_wrist', (240, 320)),
        ('cam_right_wrist', (240, 320)),
    ):
        obs[f'observation/images/{camera}'] = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        obs[f'observation/depth/{camera}'] = rng.uniform(0.2, 2.0, (h, w)).astype(np.float32)
        obs[f'observation/intrinsics/{camera}'] = np.array(
            [[w, 0, w / 2], [0, w, h / 2], [0, 0, 1]], dtype=np.float64
        )
        obs[f'observation/extrinsics/{camera}'] = np.eye(4)
    return obs


def stats_ms(samples_s: list[float]) -> dict:
    ms = np.array(samples_s) * 1e3
    return {
        'median_ms': round(float(np.median(ms)), 3),
        'p90_ms': round(float(np.percentile(ms, 90)), 3),
        'max_ms': round(float(np.max(ms)), 3),
    }


def timed(f, n: int) -> dict:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        samples.append(time.perf_counter() - t)
    return stats_ms(samples)


def _round_trips(url: str, obs: dict, requests: int) -> dict:
    with PolicyClient(url) as client:
        for _ in range(WARMUP):  # connection and allocator warm-up
            client.infer(obs)
        return timed(lambda: client.infer(obs), requests)


def _encode(encoder: Encoder, obs: dict) -> None:
    with encoder.packed(obs):
        pass


def _serve_in_child(ports: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    server = PolicyServer(Chunk, {'policy': 'chunk'})
    ports.put(server.start())
    stop.wait()
    server.stop()


def protocol_round_trip(requests: int) -> dict:
    """The round trip of one chunk request, against a server thread of this process and a
    server in another process, and what it is made of (message sizes, encode/decode)."""
    obs = observation()
    encoder = Encoder()  # what the client encodes with
    request = packb(obs)
    reply = packb(Chunk().infer(obs))
    with PolicyServer(Chunk, {'policy': 'chunk'}) as server:
        in_thread = _round_trips(server.url, obs, requests)
    # spawn: a fresh interpreter, as a policy server of its own would be (no forked threads).
    context = multiprocessing.get_context('spawn')
    ports, stop = context.Queue(), context.Event()
    child = context.Process(target=_serve_in_child, args=(ports, stop), daemon=True)
    child.start()
    try:
        port = ports.get(timeout=60)
        in_process = _round_trips(f'ws://127.0.0.1:{port}', obs, requests)
    finally:
        stop.set()
        child.join(10)
    return {
        'requests': requests,
        'request_bytes': len(request),
        'reply_bytes': len(reply),
        'server_thread': in_thread,
        'server_process': in_process,
        'parts': {
            'encode_observation': timed(lambda: _encode(encoder, obs), requests),
            'decode_observation': timed(lambda: unpackb(request), requests),
        },
    }


class Sweep:
    """Sweeps both arms' first joints slowly, 10 actions a chunk; never says done."""

    def __init__(self) -> None:
        self.k = 0

    def infer(self, obs: dict) -> dict:
        state = np.asarray(obs['observation/state'], dtype=np.float32)
        rows = np.tile(state, (HORIZON, 1))
        for n in range(HORIZON):
            self.k += 1
            rows[n, 0] = rows[n, 7] = 0.3 * np.sin(self.k / 50.0)
        return {'actions': rows}


def _serve_sweep(ports: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    with PolicyServer(Sweep, {'policy': 'sweep'}) as server:
        ports.put(server.port)
        stop.wait()


def shield_throughput(seconds: float) -> dict:
    """run_policy for `seconds` of simulated time: actions per second through the shield."""
    from harness_bringup.station_graph import StationGraph
    from harness_skills.skill_table import SKILLS
    from harness_types.convert import execution_of
    from harness_types.wait import wait_future
    from rclpy.action import ActionClient

    context = multiprocessing.get_context('spawn')
    ports, stop = context.Queue(), context.Event()
    child = context.Process(target=_serve_sweep, args=(ports, stop), daemon=True)
    child.start()
    out = {}
    try:
        url = f'ws://127.0.0.1:{ports.get(timeout=60)}'
        with StationGraph('perf_policy') as graph:
            action = ActionClient(graph.client, SKILLS['run_policy'].action, 'skills/run_policy')
            action.wait_for_server(timeout_sec=10)
            for label, cameras, depth in (
                ('no_cameras', [], False),
                (
                    'three_cameras_with_depth',
                    ['cam_head', 'cam_left_wrist', 'cam_right_wrist'],
                    True,
                ),
            ):
                graph.reset('lift_cube')
                entry = {
                    'name': 'sweep',
                    'endpoint': url,
                    'action_hz': 25.0,
                    'cameras': cameras,
                    'depth': depth,
                    'stall_seconds': 60.0,
                    'timeout_seconds': 30.0,
                }
                args = dict(instruction='sweep', max_seconds=seconds, region=None, entry=entry)
                goal = SKILLS['run_policy'].goal(args)
                started = time.perf_counter()
                handle = wait_future(action.send_goal_async(goal), 60.0)
                result = wait_future(handle.get_result_async(), 600.0).result.execution
                wall = time.perf_counter() - started
                e = execution_of(result)
                out[label] = {
                    'event': e.event,
                    'actions': e.actions,
                    'chunks': e.chunks,
                    'wall_s': round(wall, 3),
                    'actions_per_s': round(e.actions / wall, 1),
                    'x_real_time': round(seconds / wall, 2),
                }
    finally:
        stop.set()
        child.join(10)
    return {'simulated_seconds': seconds, **out}


def learned_inference(run: Path, requests: int) -> dict:
    """Round trips to a trained policy's server, with observations rendered on lift_cube."""
    import os
    import re
    import subprocess

    from arx_x5_description.embodiment import load_embodiment
    from harness_policy.learning_env import learning_python
    from harness_policy.observation import observation as observation_of
    from harness_worker.worker import Worker

    from arx_x5_description.urdf import station_urdf

    python = learning_python()
    if python is None or not (run / 'harness_training.json').is_file():
        return {'skipped': f'no learning extra or no trained policy at {run}'}
    record = json.loads((run / 'harness_training.json').read_text())
    instruction = next(iter(record['tasks']))
    server = subprocess.Popen(
        [python, '-m', 'harness_learning.serve', str(run), '--name', 'perf', '--port', '0'],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, 'MUJOCO_GL': os.environ.get('MUJOCO_GL', 'egl')},
    )
    url = None
    for line in server.stdout:
        found = re.search(r'serving perf at (ws://\S+)', line)
        if found:
            url = found.group(1)
            break
    try:
        if url is None:
            return {'skipped': f'the server did not start (exit {server.wait()})'}
        worker = Worker(load_embodiment(), station_urdf())
        r = worker.reset('lift_cube', 0, 0, token='')
        views = worker.observe(['cam_head', 'cam_left_wrist', 'cam_right_wrist'], True, False)
        obs = observation_of(r.state, views, instruction)
        worker.close()
        with PolicyClient(url, timeout_s=120) as client:
            started = time.perf_counter()
            chunk = len(client.infer(obs)['actions'])
            first = time.perf_counter() - started
            per_chunk = timed(lambda: client.infer(obs), requests)
        return {
            'policy': record['policy'],
            'requests': requests,
            'chunk_actions': chunk,
            'first_request_ms': round(first * 1e3, 1),
            'per_chunk': per_chunk,
            'per_action_median_ms': round(per_chunk['median_ms'] / chunk, 3),
        }
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    use_wheels_ament_prefix()  # the wheels' ROS packages, as `harness` finds them
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        '--requests', type=int, default=200, help='timed requests per measurement (default 200)'
    )
    parser.add_argument(
        '--seconds',
        type=float,
        default=8.0,
        help='simulated seconds of each run_policy measurement (default 8)',
    )
    parser.add_argument(
        '--trained',
        type=Path,
        default=Path(__file__).resolve().parents[1] / 'policies' / 'act_lift_cube',
        help='a `harness policy train` folder (default: the shipped policies/act_lift_cube)',
    )
    add_save_argument(parser)
    args = parser.parse_args()
    results = {
        'learned_inference': learned_inference(args.trained, min(args.requests, 50)),
        'bench': 'policy',
        'protocol_round_trip': protocol_round_trip(args.requests),
        'shield_throughput': shield_throughput(args.seconds),
    }
    inference = results['learned_inference']
    targets = [
        Target(
            'trained ACT policy on CPU, per action (a chunk of 25 per request), median',
            inference['per_action_median_ms'], '<=', 40.0, 'ms',
        )
    ]  # fmt: skip
    report(results, targets, args.save)


if __name__ == '__main__':
    main()
