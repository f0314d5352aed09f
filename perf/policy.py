"""Milliseconds per policy request over the openpi protocol (websocket + msgpack). Prints JSON.

The round trip of one chunk request with a realistic observation, median, p90 and max, against
a server in this process (a thread) and in another process.

The observation is what the harness sends: cam_head 480 x 640 colour and depth, two wrist
cameras 240 x 320 colour and depth, their calibration, the 14-number state, the time and the
prompt; the reply is a 10 x 14 float32 chunk. The policy answers at once, so the numbers are
the protocol's cost (encoding, the socket, decoding), not a model's.

    python perf/policy.py [--requests 200]
"""

import argparse
import json
import multiprocessing
import time

import numpy as np
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        '--requests', type=int, default=200, help='timed requests per measurement (default 200)'
    )
    args = parser.parse_args()
    results = {'bench': 'policy', 'protocol_round_trip': protocol_round_trip(args.requests)}
    print(json.dumps(results))


if __name__ == '__main__':
    main()
